//! SSE parsing throughput: an OpenAI-style stream of 20,000 delta events fed
//! in network-sized chunks (16 KiB) and in tiny ones (11 bytes, as the
//! scripted test server sends). Prints MiB/s and events/s.

use std::time::Instant;

use talaria_providers::sse::SseParser;

fn stream(events: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..events {
        out.extend_from_slice(
            format!(
                "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token {i} \"}},\"finish_reason\":null}}]}}\n\n"
            )
            .as_bytes(),
        );
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
    out
}

fn main() {
    let events = 20_000;
    let bytes = stream(events);
    println!(
        "{:<28} {:>10} {:>12} {:>14}",
        "chunking", "MiB", "MiB/s", "events/s"
    );
    for chunk in [16 * 1024usize, 11] {
        let mut best = f64::MAX;
        let mut parsed = 0;
        for _ in 0..5 {
            let started = Instant::now();
            let mut parser = SseParser::new();
            parsed = 0;
            for piece in bytes.chunks(chunk) {
                parsed += parser.push(piece).len();
            }
            parsed += parser.finish().len();
            best = best.min(started.elapsed().as_secs_f64());
        }
        assert_eq!(parsed, events + 1, "every event parsed");
        let mib = bytes.len() as f64 / (1024.0 * 1024.0);
        println!(
            "{:<28} {:>10.1} {:>12.0} {:>14.0}",
            format!("{chunk}-byte chunks"),
            mib,
            mib / best,
            parsed as f64 / best
        );
    }
}
