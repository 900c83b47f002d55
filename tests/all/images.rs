//! Attached images end to end: `--image` on each wire format as the scripted server records it,
//! a resumed session sending the image again, an oversized image scaled down, files that are
//! not images refused, and `vision_analyze` asking the model about an image.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers, not production code

use std::io::Cursor;
use std::path::Path;

use base64::Engine;
use talaria_testkit::{Image, Role, Script, ScriptedServer, Step, Wire};

use crate::common::*;

/// A small PNG with a gradient (compresses well: sent as it is).
fn small_png() -> Vec<u8> {
    let image = image::RgbImage::from_fn(32, 24, |x, y| {
        image::Rgb([(x * 8) as u8, (y * 10) as u8, 90])
    });
    encode_png(&image)
}

/// A PNG of noise, far over the 5 MiB (base64) limit: noise does not compress.
fn oversized_png() -> Vec<u8> {
    let mut seed = 0x9e37_79b9_u32;
    let image = image::RgbImage::from_fn(1500, 1200, |_, _| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let [r, g, b, _] = seed.to_le_bytes();
        image::Rgb([r, g, b])
    });
    encode_png(&image)
}

fn encode_png(image: &image::RgbImage) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn base64_of(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `-q PROMPT` against `server` on `wire`, in `work`, with `extra` flags.
fn query(
    home: &Home,
    work: &Path,
    server: &ScriptedServer,
    wire: Wire,
    prompt: &str,
    extra: &[&str],
) -> std::process::Command {
    let (provider, model, base) = match wire {
        Wire::OpenAi => ("openai", "test-model", server.openai_base_url()),
        Wire::Anthropic => ("anthropic", "claude-test", server.anthropic_base_url()),
        Wire::OpenAiResponses => ("openai-responses", "gpt-test", server.openai_base_url()),
    };
    let mut args = vec![
        "-q",
        prompt,
        "--provider",
        provider,
        "--model",
        model,
        "--base-url",
        &base,
    ];
    args.extend_from_slice(extra);
    let mut command = home.talaria(&args);
    command.env("TALARIA_API_KEY", "sk-test").current_dir(work);
    command
}

/// The images of the user messages of request `index`, in order.
fn user_images(server: &ScriptedServer, index: usize) -> Vec<Image> {
    server.requests()[index]
        .messages()
        .into_iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.images)
        .collect()
}

#[test]
fn every_wire_sends_an_attached_image_inline_with_its_media_type() {
    let png = small_png();
    for wire in [Wire::OpenAi, Wire::Anthropic, Wire::OpenAiResponses] {
        let home = Home::new();
        let work = home.workdir();
        std::fs::write(work.path().join("chart.png"), &png).unwrap();
        let server = ScriptedServer::spawn(Script::new([Step::text("A gradient.")])).unwrap();
        let output = run(query(
            &home,
            work.path(),
            &server,
            wire,
            "what is in this picture?",
            &["--image", "chart.png"],
        ));
        assert_code(&output, 0);
        assert_eq!(stdout(&output), "A gradient.\n", "{wire}");
        let requests = server.requests();
        assert_eq!(requests[0].wire, wire);
        let user: Vec<_> = requests[0]
            .messages()
            .into_iter()
            .filter(|m| m.role == Role::User)
            .collect();
        assert_eq!(user.len(), 1, "{wire}");
        assert_eq!(user[0].text, "what is in this picture?", "{wire}");
        assert_eq!(
            user[0].images,
            [Image::Inline {
                media_type: "image/png".into(),
                data: base64_of(&png),
            }],
            "{wire}"
        );
        // Stored once, by content, in the profile's image store.
        let stored: Vec<_> = std::fs::read_dir(home.path().join("images"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert_eq!(stored.len(), 1, "{stored:?}");
        assert_eq!(std::fs::read(&stored[0]).unwrap(), png);
    }
}

#[test]
fn a_continued_session_sends_the_image_again_without_storing_its_bytes() {
    let home = Home::new();
    let work = home.workdir();
    let png = small_png();
    std::fs::write(work.path().join("chart.png"), &png).unwrap();
    let server = ScriptedServer::spawn(Script::new([
        Step::text("A gradient."),
        Step::text("Still a gradient."),
    ]))
    .unwrap();
    let first = run(query(
        &home,
        work.path(),
        &server,
        Wire::Anthropic,
        "what is this?",
        &["--image", "chart.png"],
    ));
    assert_code(&first, 0);
    let second = run(query(
        &home,
        work.path(),
        &server,
        Wire::Anthropic,
        "and now?",
        &["--continue"],
    ));
    assert_code(&second, 0);
    let expected = Image::Inline {
        media_type: "image/png".into(),
        data: base64_of(&png),
    };
    assert_eq!(user_images(&server, 0), std::slice::from_ref(&expected));
    assert_eq!(
        user_images(&server, 1),
        [expected],
        "the first turn's image, again"
    );
    // The database (and its write-ahead log) holds the reference, not the bytes.
    let mut db = Vec::new();
    for entry in std::fs::read_dir(home.path().join("state")).unwrap() {
        db.extend(std::fs::read(entry.unwrap().path()).unwrap_or_default());
    }
    assert!(String::from_utf8_lossy(&db).contains("\"media_type\":\"image/png\""));
    let bytes_start = &png[16..48];
    assert!(
        !db.windows(bytes_start.len()).any(|w| w == bytes_start),
        "image bytes in the session database"
    );
}

#[test]
fn an_oversized_image_is_scaled_down_under_the_limit() {
    let home = Home::new();
    let work = home.workdir();
    let big = oversized_png();
    assert!(big.len() > 5 * 1024 * 1024, "{} bytes", big.len());
    std::fs::write(work.path().join("noise.png"), &big).unwrap();
    let server = ScriptedServer::spawn(Script::new([Step::text("Static.")])).unwrap();
    let output = run(query(
        &home,
        work.path(),
        &server,
        Wire::Anthropic,
        "what is this?",
        &["--image", "noise.png"],
    ));
    assert_code(&output, 0);
    assert_contains(
        &stderr(&output),
        "noise.png was scaled down from 1500x1200 px",
    );
    let images = user_images(&server, 0);
    let [Image::Inline { media_type, data }] = images.as_slice() else {
        panic!("one inline image: {images:?}");
    };
    assert_eq!(media_type, "image/jpeg");
    assert!(data.len() <= 5 * 1024 * 1024, "{} base64 bytes", data.len());
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let decoded = image::load_from_memory(&bytes).unwrap();
    assert!(decoded.width() < 1500 && decoded.width() * 4 == decoded.height() * 5);
}

#[test]
fn files_that_are_not_images_or_are_damaged_are_refused_before_any_request() {
    let home = Home::new();
    let work = home.workdir();
    std::fs::write(
        work.path().join("notes.png"),
        "these are notes, not a picture",
    )
    .unwrap();
    let mut damaged = small_png();
    damaged.truncate(damaged.len() - 20);
    std::fs::write(work.path().join("half.png"), &damaged).unwrap();
    let server = ScriptedServer::spawn(Script::new([Step::text("unused")])).unwrap();
    for (file, message) in [
        (
            "notes.png",
            "notes.png is not an image that can be sent to a model (it is text)",
        ),
        ("half.png", "the image half.png is damaged"),
        ("missing.png", "cannot read the image missing.png"),
    ] {
        let output = run(query(
            &home,
            work.path(),
            &server,
            Wire::OpenAi,
            "look",
            &["--image", file],
        ));
        assert_code(&output, 2);
        assert_contains(&stderr(&output), message);
    }
    assert!(server.requests().is_empty(), "nothing was sent");
}

/// The question of a `vision_analyze` request, which must carry `png` inline.
fn vision_question(request: &talaria_testkit::RecordedRequest, png: &[u8]) -> String {
    let messages = request.messages();
    let user = messages.iter().find(|m| m.role == Role::User).unwrap();
    assert_eq!(
        user.images,
        [Image::Inline {
            media_type: "image/png".into(),
            data: base64_of(png),
        }]
    );
    user.text.clone()
}

#[test]
fn vision_analyze_asks_the_model_about_the_image_and_returns_its_answer() {
    let home = Home::new();
    let work = home.workdir();
    let png = small_png();
    std::fs::write(work.path().join("shot.png"), &png).unwrap();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call(
            "vision_analyze",
            r#"{"image_url":"shot.png","question":"Which colours are in it?"}"#,
        ),
        Step::text("Red fading into green over a blue tint."),
        Step::text("The screenshot is a red-green gradient."),
    ]))
    .unwrap();
    let output = run(query(
        &home,
        work.path(),
        &server,
        Wire::OpenAi,
        "describe shot.png",
        &[],
    ));
    assert_code(&output, 0);
    assert_eq!(stdout(&output), "The screenshot is a red-green gradient.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[0].tools_raw().contains("\"vision_analyze\""),
        "offered to the model"
    );
    // The analysis is one request of its own: the question and the image, no tools.
    assert_eq!(
        vision_question(&requests[1], &png),
        "Which colours are in it?"
    );
    assert!(requests[1].tools_raw().is_empty());
    let results = tool_results(&server, 2);
    assert_eq!(results.len(), 1);
    assert_contains(&results[0], "Red fading into green over a blue tint.");
}

#[test]
fn vision_analyze_failures_are_results_the_model_reads() {
    let home = Home::new();
    let work = home.workdir();
    std::fs::write(work.path().join("notes.txt"), "text").unwrap();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call(
            "vision_analyze",
            r#"{"image_url":"notes.txt","question":"what is it?"}"#,
        ),
        Step::text("That is not an image."),
    ]))
    .unwrap();
    let output = run(query(
        &home,
        work.path(),
        &server,
        Wire::OpenAi,
        "look",
        &[],
    ));
    assert_code(&output, 0);
    let results = tool_results(&server, 1);
    assert_contains(&results[0], "notes.txt is not an image");
}

/// Issue 47: an image URL is fetched by Talaria under the web tools' egress rule and sent as
/// data, never handed to the provider (which would fetch whatever the model wrote, a LAN or
/// metadata address or an attacker's URL carrying a secret). A private address is refused
/// before any request; where the user allows private URLs, the bytes go inline.
#[test]
fn vision_analyze_fetches_urls_itself_and_refuses_private_addresses() {
    let pictures = tempfile::tempdir().unwrap();
    let png = small_png();
    std::fs::write(pictures.path().join("p.png"), &png).unwrap();
    let origin = talaria_testkit::StaticServer::spawn(pictures.path()).unwrap();
    let url = format!("{}p.png?m=memory-secret-4711", origin.base_url());
    let ask = serde_json::json!({"image_url": url, "question": "what is it?"}).to_string();

    let home = Home::new();
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call("vision_analyze", &ask),
        Step::text("refused"),
    ]))
    .unwrap();
    let output = run(query(
        &home,
        work.path(),
        &server,
        Wire::OpenAi,
        "look",
        &[],
    ));
    assert_code(&output, 0);
    let results = tool_results(&server, 1);
    assert_contains(&results[0], "private addresses are refused");
    assert_eq!(server.requests().len(), 2, "no image was sent to a model");
    assert!(origin.requested().is_empty(), "{:?}", origin.requested());

    let home = Home::new();
    home.write_config("security:\n  allow_private_urls: true\n");
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call("vision_analyze", &ask),
        Step::text("A gradient."),
        Step::text("done"),
    ]))
    .unwrap();
    let output = run(query(
        &home,
        work.path(),
        &server,
        Wire::OpenAi,
        "look",
        &[],
    ));
    assert_code(&output, 0);
    let requests = server.requests();
    vision_question(&requests[1], &png);
    assert!(!requests[1].raw_body.contains("memory-secret-4711"));
    assert_eq!(origin.requested().len(), 1);
}
