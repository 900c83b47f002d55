"""The wire format is plain Python: `python3 -m unittest` runs these natively
(they are not part of the component)."""

import unittest

from protocol import (
    DEFAULT_HOST,
    DEFAULT_NICK,
    DEFAULT_PORT,
    LineBuffer,
    Settings,
    outgoing_lines,
    parse_line,
)


class ParseLine(unittest.TestCase):
    def test_a_line_from_a_user_is_an_addressed_direct_message(self):
        message = parse_line("ann: hello there", "talaria")
        self.assertEqual((message.chat, message.kind, message.sender), ("ann", "dm", "ann"))
        self.assertEqual(message.text, "hello there")
        self.assertTrue(message.addressed)
        self.assertEqual(message.raw, "ann: hello there")

    def test_in_a_room_only_a_mention_addresses_the_bot(self):
        asked = parse_line("#team ann: talaria, what time is it?", "talaria")
        self.assertEqual((asked.chat, asked.kind), ("#team", "group"))
        self.assertTrue(asked.addressed)
        self.assertEqual(asked.text, "what time is it?")
        chatter = parse_line("#team ann: lunch?", "talaria")
        self.assertFalse(chatter.addressed)
        self.assertEqual(chatter.text, "lunch?")

    def test_other_lines_and_the_bots_own_are_not_messages(self):
        for line in [
            "welcome to the chat",
            "talaria: an echo of our own",
            "ann:   ",
            "#team nobody",
            "# ann: hi",
            "two words: hi",
        ]:
            self.assertIsNone(parse_line(line, "talaria"), line)


class OutgoingLines(unittest.TestCase):
    def test_an_answer_becomes_one_line_per_line_of_text(self):
        self.assertEqual(
            outgoing_lines("ann", "first\r\n\nsecond\rhalf\n"), ["@ann first", "@ann second half"]
        )
        self.assertEqual(outgoing_lines("#team", " \n"), [])


class SettingsLoad(unittest.TestCase):
    def test_settings_have_defaults_and_bad_values_are_explained(self):
        self.assertEqual(
            Settings.load(lambda key: None), Settings(DEFAULT_HOST, DEFAULT_PORT, DEFAULT_NICK)
        )
        given = {"host": "chat.example.org", "port": "7000", "nick": "bot"}
        self.assertEqual(Settings.load(given.get), Settings("chat.example.org", 7000, "bot"))
        with self.assertRaisesRegex(ValueError, "`port` 'seventy'"):
            Settings.load({"port": "seventy"}.get)
        with self.assertRaisesRegex(ValueError, "`port` '0'"):
            Settings.load({"port": "0"}.get)
        with self.assertRaisesRegex(ValueError, "`nick`"):
            Settings.load({"nick": "a b"}.get)


class Buffer(unittest.TestCase):
    def test_lines_are_split_across_reads_and_crlf_is_dropped(self):
        buffer = LineBuffer(100)
        buffer.push(b"ann: he")
        self.assertIsNone(buffer.pop())
        buffer.push(b"llo\r\nbob: hi\n")
        self.assertEqual([buffer.pop(), buffer.pop(), buffer.pop()], ["ann: hello", "bob: hi", None])

    def test_an_overlong_line_is_dropped_whole_and_the_next_one_kept(self):
        buffer = LineBuffer(8)
        buffer.push(b"x" * 6)
        buffer.push(b"y" * 6)
        buffer.push(b"zz\nok\n")
        self.assertEqual([buffer.pop(), buffer.pop()], ["ok", None])
        self.assertEqual(buffer.dropped, 1)

    def test_invalid_utf8_is_replaced(self):
        buffer = LineBuffer(100)
        buffer.push(b"ann: caf\xe9\n")
        self.assertEqual(buffer.pop(), "ann: caf\ufffd")


if __name__ == "__main__":
    unittest.main()
