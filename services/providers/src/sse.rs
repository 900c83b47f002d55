//! An incremental Server-Sent-Events parser (the WHATWG `text/event-stream`
//! format), fed with arbitrary byte chunks as they come off the network.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, if the event had one.
    pub event: Option<String>,
    /// All `data:` lines of the event, joined with `\n`.
    pub data: String,
    /// The last event id seen on the stream (`id:` persists across events).
    pub id: Option<String>,
}

/// Turns a byte stream into events. Chunks may split the stream anywhere:
/// inside a UTF-8 character, between `\r` and `\n`, or inside a field name.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, unterminated line.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a leading `\n` belongs to that line end.
    after_cr: bool,
    /// Still at the very start of the stream (a UTF-8 BOM is dropped there).
    at_start: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    last_id: Option<String>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self {
            at_start: true,
            ..Self::default()
        }
    }

    /// Feeds the next chunk and returns the events it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if self.at_start {
            // Hold bytes back until we know whether the stream starts with a BOM.
            self.line.extend_from_slice(chunk);
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return events;
            }
            self.at_start = false;
            let mut pending = std::mem::take(&mut self.line);
            if pending.starts_with(BOM) {
                pending.drain(..BOM.len());
            }
            self.feed(&pending, &mut events);
        } else {
            // A `\n` right after a chunk-final `\r` completes that CRLF.
            let skip_lf =
                !chunk.is_empty() && std::mem::take(&mut self.after_cr) && chunk[0] == b'\n';
            self.feed(&chunk[usize::from(skip_lf)..], &mut events);
        }
        events
    }

    /// Ends the stream: an unterminated last line and a pending event (one not
    /// yet followed by a blank line) are dispatched rather than dropped. The
    /// parser is then ready for a new stream.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.process_line(&line, &mut events);
        }
        self.dispatch(&mut events);
        *self = Self::new();
        events
    }

    fn feed(&mut self, mut bytes: &[u8], events: &mut Vec<SseEvent>) {
        while let Some(end) = bytes.iter().position(|&b| b == b'\r' || b == b'\n') {
            if self.line.is_empty() {
                self.process_line(&bytes[..end], events);
            } else {
                self.line.extend_from_slice(&bytes[..end]);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, events);
            }
            let terminator = bytes[end];
            bytes = &bytes[end + 1..];
            if terminator == b'\r' {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.line.extend_from_slice(bytes);
    }

    fn process_line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(events);
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return, // comment
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        let value = String::from_utf8_lossy(value);
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => self.event = Some(value.into_owned()),
            b"id" if !value.contains('\0') => self.last_id = Some(value.into_owned()),
            _ => {} // `retry` and unknown fields are ignored
        }
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        events.push(SseEvent {
            event: event.filter(|name| !name.is_empty()),
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ev(event: Option<&str>, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
            id: id.map(str::to_owned),
        }
    }

    fn parse_whole(bytes: &[u8]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = parser.push(bytes);
        events.extend(parser.finish());
        events
    }

    fn parse_bytewise(bytes: &[u8]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for byte in bytes {
            events.extend(parser.push(std::slice::from_ref(byte)));
        }
        events.extend(parser.finish());
        events
    }

    #[test]
    fn parses_fields_comments_and_multiline_data() {
        let stream = b": ping\nevent: message_start\nid: 7\ndata: {\"a\":1}\n\n\
            data:first\ndata:  second\ndata\n\n";
        let expected = vec![
            ev(Some("message_start"), "{\"a\":1}", Some("7")),
            ev(None, "first\n second\n", Some("7")),
        ];
        assert_eq!(parse_whole(stream), expected);
        assert_eq!(parse_bytewise(stream), expected);
    }

    #[test]
    fn handles_crlf_and_cr_line_endings() {
        let stream = b"data: a\r\n\r\ndata: b\r\rdata: c\n\r\n";
        let expected = vec![
            ev(None, "a", None),
            ev(None, "b", None),
            ev(None, "c", None),
        ];
        assert_eq!(parse_whole(stream), expected);
        assert_eq!(parse_bytewise(stream), expected);
    }

    #[test]
    fn split_between_cr_and_lf_is_one_line_end() {
        let mut parser = SseParser::new();
        assert!(parser.push(b"data: x\r").is_empty());
        // The LF completes the CRLF of the data line; it is not a blank line.
        assert!(parser.push(b"\n").is_empty());
        assert_eq!(parser.push(b"\r\n"), vec![ev(None, "x", None)]);
    }

    #[test]
    fn split_inside_multibyte_char() {
        let stream = "data: h\u{e9}llo \u{1F600}\n\n".as_bytes();
        let mut parser = SseParser::new();
        let (a, b) = stream.split_at(9); // inside the two-byte é
        assert!(parser.push(a).is_empty());
        assert_eq!(parser.push(b), vec![ev(None, "h\u{e9}llo \u{1F600}", None)]);
        assert_eq!(
            parse_bytewise(stream),
            vec![ev(None, "h\u{e9}llo \u{1F600}", None)]
        );
    }

    #[test]
    fn events_without_data_are_not_dispatched_and_reset_type() {
        let stream = b"event: ping\n\ndata: x\n\n";
        assert_eq!(parse_whole(stream), vec![ev(None, "x", None)]);
    }

    #[test]
    fn empty_data_field_dispatches_empty_event() {
        assert_eq!(parse_whole(b"data:\n\n"), vec![ev(None, "", None)]);
    }

    #[test]
    fn bom_is_dropped_even_when_split() {
        let mut parser = SseParser::new();
        assert!(parser.push(b"\xEF").is_empty());
        assert!(parser.push(b"\xBB\xBFda").is_empty());
        assert_eq!(parser.push(b"ta: y\n\n"), vec![ev(None, "y", None)]);
    }

    #[test]
    fn finish_flushes_unterminated_event() {
        let mut parser = SseParser::new();
        assert!(parser.push(b"data: [DONE]").is_empty());
        assert_eq!(parser.finish(), vec![ev(None, "[DONE]", None)]);
        assert!(parser.finish().is_empty());
    }

    #[test]
    fn id_with_nul_is_ignored_and_id_persists() {
        let stream = b"id: 1\ndata: a\n\nid: x\0y\ndata: b\n\n";
        assert_eq!(
            parse_whole(stream),
            vec![ev(None, "a", Some("1")), ev(None, "b", Some("1"))]
        );
    }

    /// One generated event: optional type, data lines, optional id, a leading
    /// comment, and the line ending all its lines use.
    #[derive(Debug, Clone)]
    struct GenEvent {
        event: Option<String>,
        data: Vec<String>,
        id: Option<String>,
        comment: bool,
        ending: &'static str,
    }

    fn gen_event() -> impl Strategy<Value = GenEvent> {
        (
            proptest::option::of("[a-z_]{1,12}"),
            proptest::collection::vec("[^\r\n]{0,20}", 1..4),
            proptest::option::of("[a-z0-9]{1,6}"),
            any::<bool>(),
            prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        )
            .prop_map(|(event, data, id, comment, ending)| GenEvent {
                event,
                data,
                id,
                comment,
                ending,
            })
    }

    fn render(events: &[GenEvent]) -> (Vec<u8>, Vec<SseEvent>) {
        let mut bytes = String::new();
        let mut expected = Vec::new();
        let mut last_id = None;
        for e in events {
            let nl = e.ending;
            if e.comment {
                bytes.push_str(&format!(": keep-alive{nl}"));
            }
            if let Some(name) = &e.event {
                bytes.push_str(&format!("event: {name}{nl}"));
            }
            if let Some(id) = &e.id {
                bytes.push_str(&format!("id:{id}{nl}"));
                last_id = Some(id.clone());
            }
            for line in &e.data {
                bytes.push_str(&format!("data: {line}{nl}"));
            }
            bytes.push_str(nl);
            expected.push(SseEvent {
                event: e.event.clone(),
                data: e.data.join("\n"),
                id: last_id.clone(),
            });
        }
        (bytes.into_bytes(), expected)
    }

    proptest! {
        #[test]
        fn random_splits_yield_the_same_events(
            events in proptest::collection::vec(gen_event(), 0..6),
            cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 0..12),
        ) {
            let (bytes, expected) = render(&events);
            prop_assert_eq!(&parse_whole(&bytes), &expected);

            let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut parser = SseParser::new();
            let mut got = Vec::new();
            let mut start = 0;
            for point in points {
                got.extend(parser.push(&bytes[start..point]));
                start = point;
            }
            got.extend(parser.push(&bytes[start..]));
            got.extend(parser.finish());
            prop_assert_eq!(got, expected);
        }
    }
}
