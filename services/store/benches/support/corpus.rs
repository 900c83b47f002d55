//! A seeded generator of realistic-looking conversation text: English-like
//! sentences from a word list with Zipf-distributed word frequencies, code
//! identifiers, paths and numbers, and now and then a Chinese sentence.

use talaria_kernel::{Message, ToolCall, ToolResult};

/// About five hundred common and technical English words, most frequent first.
const WORDS: &str = include_str!("words.txt");

/// Chinese phrases mixed into a few messages.
const CJK: &[&str] = &[
    "数据库迁移失败了",
    "请帮我检查这个函数",
    "测试全部通过",
    "配置文件找不到",
    "网络连接超时",
    "内存使用太高",
    "代码审查意见",
    "部署到生产环境",
];

/// Word picker with a Zipf distribution (weight 1/rank).
pub struct Corpus {
    pub words: Vec<&'static str>,
    cumulative: Vec<f64>,
    rng: fastrand::Rng,
}

impl Corpus {
    pub fn new(seed: u64) -> Self {
        let words: Vec<&str> = WORDS.split_whitespace().collect();
        let mut total = 0.0;
        let cumulative = (0..words.len())
            .map(|rank| {
                total += 1.0 / (rank as f64 + 1.0);
                total
            })
            .collect();
        Self {
            words,
            cumulative,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    pub fn word(&mut self) -> &'static str {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let target = self.rng.f64() * total;
        let index = self.cumulative.partition_point(|&c| c < target);
        self.words[index.min(self.words.len() - 1)]
    }

    fn token(&mut self) -> String {
        match self.rng.u32(0..100) {
            0..=2 => format!("{}_{}", self.word(), self.word()),
            3 => format!("src/{}/{}.rs", self.word(), self.word()),
            4 => self.rng.u32(0..10_000).to_string(),
            _ => self.word().to_owned(),
        }
    }

    /// A few sentences of `min..max` words in total.
    pub fn text(&mut self, min: usize, max: usize) -> String {
        let count = self.rng.usize(min..max);
        let mut text = String::new();
        let mut sentence = 0;
        for index in 0..count {
            let mut token = self.token();
            if sentence == 0 {
                token = capitalise(&token);
            } else {
                text.push(' ');
            }
            text.push_str(&token);
            sentence += 1;
            if sentence > 4 && (self.rng.u32(0..8) == 0 || index + 1 == count) {
                text.push(if self.rng.u32(0..5) == 0 { '?' } else { '.' });
                text.push(' ');
                sentence = 0;
            }
        }
        if self.rng.u32(0..30) == 0 {
            text.push_str(CJK[self.rng.usize(0..CJK.len())]);
        }
        text.trim_end().to_owned()
    }

    /// Message `index` of a session: user, assistant (sometimes with a tool
    /// call), tool result, assistant, …
    pub fn message(&mut self, session: usize, index: usize) -> Message {
        match index % 4 {
            0 => Message::user(self.text(4, 20)),
            1 => {
                let call = ToolCall {
                    id: format!("call_{session}_{index}"),
                    name: "terminal".into(),
                    arguments: format!(r#"{{"command":"cargo {}"}}"#, self.word()),
                };
                Message {
                    tool_calls: vec![call],
                    ..Message::assistant(self.text(6, 30))
                }
            }
            2 => {
                let call = ToolCall {
                    id: format!("call_{session}_{}", index - 1),
                    name: "terminal".into(),
                    arguments: String::new(),
                };
                Message::tool_result(&ToolResult::ok(&call, self.text(8, 40)))
            }
            _ => Message::assistant(self.text(10, 50)),
        }
    }
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
