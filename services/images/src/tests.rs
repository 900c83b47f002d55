use super::*;

fn png(width: u32, height: u32, noisy: bool) -> Vec<u8> {
    let mut seed = 0x2545_f491_u32;
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        if noisy {
            // Noise does not compress: a big file from few pixels.
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let [r, g, b, _] = seed.to_le_bytes();
            image::Rgb([r, g, b])
        } else {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
        }
    });
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, ImageFormat::Png).unwrap();
    out.into_inner()
}

#[test]
fn sniffs_the_four_formats_by_content_only() {
    assert_eq!(sniff(&png(2, 2, false)), Some(Format::Png));
    assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some(Format::Jpeg));
    assert_eq!(sniff(b"GIF89a...."), Some(Format::Gif));
    assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(Format::Webp));
    assert_eq!(sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
    assert_eq!(sniff(b"%PDF-1.7"), None);
}

#[test]
fn a_small_image_is_stored_as_it_is_under_its_hash_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = ImageStore::new(dir.path().join("images"));
    let bytes = png(4, 3, false);
    let source = dir.path().join("shot.PNG");
    std::fs::write(&source, &bytes).unwrap();
    let first = store.attach_file(&source).unwrap();
    let again = store.attach_bytes(&bytes, "pasted").unwrap();
    assert_eq!(first.image, again.image);
    assert_eq!(first.note, None);
    let ImageRef::File { path, media_type } = first.image else {
        panic!("a file reference");
    };
    assert_eq!(media_type, "image/png");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "not re-encoded");
    let digest = hex::encode(Sha256::digest(&bytes));
    assert_eq!(
        path,
        dir.path().join("images").join(format!("{digest}.png"))
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("images"))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn an_image_over_the_byte_limit_is_scaled_down_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = ImageStore::new(dir.path());
    let bytes = png(1400, 1200, true);
    assert!(bytes.len() > MAX_BYTES, "{} bytes", bytes.len());
    let attached = store.attach_bytes(&bytes, "noise.png").unwrap();
    let ImageRef::File { path, media_type } = &attached.image else {
        panic!("a file reference");
    };
    assert_eq!(media_type, "image/jpeg", "an opaque image becomes a JPEG");
    let stored = std::fs::read(path).unwrap();
    assert!(stored.len() <= MAX_BYTES, "{} bytes", stored.len());
    assert_eq!(sniff(&stored), Some(Format::Jpeg));
    let note = attached.note.unwrap();
    assert!(
        note.contains("noise.png was scaled down from 1400x1200 px"),
        "{note}"
    );
}

#[test]
fn an_image_over_the_side_limit_is_scaled_to_it() {
    let (bytes, format, note) = prepare(&png(8100, 10, false), "wide.png").unwrap();
    assert_eq!(format, Format::Jpeg);
    let decoded = image::load_from_memory(&bytes).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (8000, 10));
    assert!(note.is_some());
}

#[test]
fn non_images_and_damaged_images_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = ImageStore::new(dir.path().join("images"));
    let text = dir.path().join("notes.png");
    std::fs::write(&text, "not a picture at all").unwrap();
    let error = store.attach_file(&text).unwrap_err().to_string();
    assert!(error.contains("notes.png is not an image"), "{error}");
    assert!(error.contains("it is text"), "{error}");

    let mut damaged = png(64, 64, true);
    damaged.truncate(damaged.len() / 2);
    let error = store.attach_bytes(&damaged, "half.png").unwrap_err();
    assert!(matches!(error, ImageError::Corrupt { .. }), "{error}");
    assert!(error.to_string().contains("half.png is damaged"), "{error}");

    let missing = store.attach_file(&dir.path().join("gone.png")).unwrap_err();
    assert!(missing.to_string().contains("gone.png"), "{missing}");
    assert!(!dir.path().join("images").exists(), "nothing stored");
}

#[test]
fn urls_must_be_http() {
    assert_eq!(
        url_image(" https://example.com/a.png ").unwrap(),
        ImageRef::Url {
            url: "https://example.com/a.png".into()
        }
    );
    assert!(url_image("file:///etc/passwd").is_err());
    assert!(url_image("ftp://x/a.png").is_err());
}

#[test]
fn dropped_paths_are_recognised_quoted_escaped_or_plain() {
    let dir = tempfile::tempdir().unwrap();
    let spaced = dir.path().join("my shot.png");
    std::fs::write(&spaced, b"x").unwrap();
    let plain = dir.path().join("a.JPG");
    std::fs::write(&plain, b"x").unwrap();
    let quoted = format!("'{}'", spaced.display());
    let escaped = spaced.display().to_string().replace(' ', "\\ ");
    for text in [quoted.as_str(), escaped.as_str()] {
        assert_eq!(
            dropped_image_path(text, Path::new("/")),
            Some(spaced.clone()),
            "{text}"
        );
    }
    assert_eq!(
        dropped_image_path("a.JPG ", dir.path()),
        Some(plain.clone())
    );
    assert_eq!(
        dropped_image_path(&format!("file://{}", plain.display()), Path::new("/")),
        Some(plain)
    );
    assert_eq!(dropped_image_path("look at a.JPG", dir.path()), None);
    assert_eq!(dropped_image_path("missing.png", dir.path()), None);
    assert_eq!(dropped_image_path("notes.txt", dir.path()), None);
}
