//! Incoming newline-delimited frames with a length limit. A longer line is
//! dropped without being buffered, and the editor gets a JSON-RPC error for it
//! (with `id: null`: the id was in the dropped bytes); the connection goes on.

use futures::Stream;
use futures::channel::mpsc::UnboundedSender;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// What the reader does with one line.
enum Read {
    Line(Vec<u8>),
    Oversized(usize),
    End,
}

async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    max: usize,
) -> std::io::Result<Read> {
    let mut line = Vec::new();
    let mut seen = 0usize;
    let mut oversized = false;
    loop {
        let (used, done) = {
            let buf = reader.fill_buf().await?;
            if buf.is_empty() {
                if seen == 0 {
                    return Ok(Read::End);
                }
                break;
            }
            let (part, used, done) = match memchr_newline(buf) {
                Some(at) => (&buf[..at], at + 1, true),
                None => (buf, buf.len(), false),
            };
            seen = seen.saturating_add(part.len());
            if seen > max {
                oversized = true;
                line = Vec::new();
            } else if !oversized {
                line.extend_from_slice(part);
            }
            (used, done)
        };
        reader.consume(used);
        if done {
            break;
        }
    }
    if oversized {
        return Ok(Read::Oversized(seen));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Read::Line(line))
}

fn memchr_newline(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|b| *b == b'\n')
}

/// The frames of `reader`, each at most `max` bytes. Errors for dropped lines
/// go straight to `replies` (the outgoing frames).
pub fn bounded_lines<R>(
    reader: R,
    max: usize,
    replies: UnboundedSender<String>,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static
where
    R: AsyncRead + Unpin + Send + 'static,
{
    futures::stream::unfold(
        (BufReader::new(reader), replies),
        move |(mut reader, replies)| async move {
            loop {
                match read_line(&mut reader, max).await {
                    Ok(Read::End) => return None,
                    Ok(Read::Oversized(bytes)) => {
                        eprintln!(
                            "talaria acp: dropped a line of {bytes} bytes (the limit is {max})"
                        );
                        let error = json!({
                            "jsonrpc": "2.0",
                            "id": null,
                            "error": {
                                "code": -32600,
                                "message": format!(
                                    "Invalid request: a line of {bytes} bytes exceeds the limit of {max} bytes; it was dropped"
                                ),
                            }
                        });
                        let _ = replies.unbounded_send(error.to_string());
                    }
                    Ok(Read::Line(line)) => {
                        if line.iter().all(u8::is_ascii_whitespace) {
                            continue;
                        }
                        // Invalid UTF-8 becomes a parse error from the protocol layer.
                        let text = String::from_utf8(line)
                            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                        return Some((Ok(text), (reader, replies)));
                    }
                    Err(error) => return Some((Err(error), (reader, replies))),
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    #[tokio::test]
    async fn long_lines_are_dropped_with_an_error_and_reading_goes_on() {
        let input = format!("{{\"a\":1}}\r\n\n{}\n{{\"b\":2}}", "x".repeat(100));
        let (tx, mut rx) = futures::channel::mpsc::unbounded();
        let lines: Vec<String> = bounded_lines(std::io::Cursor::new(input.into_bytes()), 64, tx)
            .map(Result::unwrap)
            .collect()
            .await;
        assert_eq!(lines, [r#"{"a":1}"#, r#"{"b":2}"#]);
        let error = rx.next().await.unwrap();
        assert!(
            error.contains("-32600") && error.contains("100 bytes"),
            "{error}"
        );
    }
}
