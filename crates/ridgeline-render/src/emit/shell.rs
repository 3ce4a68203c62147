//! Command lines as shell text: words, then one flag per line with its value, quoted
//! only where the shell needs it; a script is comment lines then commands.

/// One command: its leading words (program, subcommand, positional arguments) and flags.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cmd {
    words: Vec<String>,
    flags: Vec<(String, Option<String>)>,
}

impl Cmd {
    /// A command of these leading words.
    pub(crate) fn new<S: AsRef<str>>(words: &[S]) -> Cmd {
        Cmd {
            words: words.iter().map(|w| w.as_ref().to_string()).collect(),
            flags: Vec::new(),
        }
    }

    /// `flag value`.
    pub(crate) fn flag(&mut self, flag: &str, value: impl std::fmt::Display) -> &mut Cmd {
        self.flags.push((flag.to_string(), Some(value.to_string())));
        self
    }

    /// A flag without a value (a switch), or a bare word such as `key=value`.
    pub(crate) fn switch(&mut self, flag: &str) -> &mut Cmd {
        self.flags.push((flag.to_string(), None));
        self
    }

    /// The command as shell text: the words on the first line, each flag on its own
    /// continued line.
    pub(crate) fn render(&self, indent: &str) -> String {
        let mut lines = vec![
            self.words
                .iter()
                .map(|w| quote(w))
                .collect::<Vec<_>>()
                .join(" "),
        ];
        for (f, v) in &self.flags {
            lines.push(match v {
                Some(v) => format!("{indent}  {} {}", quote(f), quote(v)),
                None => format!("{indent}  {}", quote(f)),
            });
        }
        lines.join(" \\\n")
    }

    /// The words of the command as a list (for a YAML `command:` / `args:`).
    pub(crate) fn argv(&self) -> Vec<String> {
        let mut v = self.words.clone();
        for (f, val) in &self.flags {
            v.push(f.clone());
            if let Some(val) = val {
                v.push(val.clone());
            }
        }
        v
    }
}

/// `word` as the shell reads it back: as is when it holds only safe characters, else in
/// single quotes.
pub(crate) fn quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A shell script: `#!/bin/sh`, the comment lines, then the commands, one after another.
pub(crate) fn script(comments: &[String], cmds: &[&Cmd]) -> String {
    let mut out = String::from("#!/bin/sh\n");
    for c in comments {
        out.push_str(&format!("# {c}\n"));
    }
    for cmd in cmds {
        out.push_str(&cmd.render(""));
        out.push('\n');
    }
    out
}

/// A YAML double-quoted scalar.
pub(crate) fn yaml_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}
