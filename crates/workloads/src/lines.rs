//! The data lines of a text data file (LIBSVM, CSV): comments and blank lines skipped, each
//! line's number kept for the errors, and the labels checked as the model reads them.

use std::io::BufRead;

use outrun_config::Labels;

use crate::rows::DataError;

/// The data lines of a text file: comments (`#` on) and blank lines skipped, each line's number
/// kept for the errors (LIBSVM and CSV).
pub(crate) struct DataLines<'a, R: BufRead> {
    lines: std::io::Lines<R>,
    /// The current line's number (1-based).
    pub(crate) ln: usize,
    origin: &'a str,
    /// A `#` between double quotes is text, not a comment (CSV's quoted fields).
    quoted: bool,
}

impl<'a, R: BufRead> DataLines<'a, R> {
    /// The lines of `text`, named `origin` in errors.
    pub(crate) fn new(text: R, origin: &'a str) -> Self {
        DataLines { lines: text.lines(), ln: 0, origin, quoted: false }
    }

    /// The same, where a `#` inside a double-quoted field is part of the field (CSV).
    pub(crate) fn quoted(text: R, origin: &'a str) -> Self {
        DataLines { quoted: true, ..Self::new(text, origin) }
    }

    /// An error about the current line: `origin:line: what`.
    pub(crate) fn bad(&self, what: String) -> DataError {
        DataError::line(self.origin, self.ln, what)
    }

    /// The next data line, without its comment, trimmed (and the first without a UTF-8
    /// byte-order mark, which editors write and which would otherwise make a first data line
    /// unreadable: a CSV took it for a header).
    pub(crate) fn next_data(&mut self) -> Result<Option<String>, DataError> {
        loop {
            let Some(line) = self.lines.next() else { return Ok(None) };
            self.ln += 1;
            let line = line.map_err(|e| match e.kind() {
                // a binary file: an IDX file, a compressed one of another kind, a spreadsheet
                std::io::ErrorKind::InvalidData => self
                    .bad(format!("not UTF-8 text ({e}): a binary file? (data.kind = \"idx\" reads MNIST's IDX files)")),
                _ => self.bad(format!("cannot read: {e}")),
            })?;
            let line = if self.ln == 1 { line.strip_prefix('\u{feff}').unwrap_or(&line) } else { &line };
            let line = uncomment(line, self.quoted).trim();
            if !line.is_empty() {
                return Ok(Some(line.to_string()));
            }
        }
    }
}

/// `line` up to its comment: the first `#`, or with `quoted` the first outside double quotes (a
/// doubled `""` inside quotes toggles twice and stays inside; an unclosed quote keeps the rest,
/// which the CSV reader then refuses naming the column).
fn uncomment(line: &str, quoted: bool) -> &str {
    let mut inside = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' if quoted => inside = !inside,
            '#' if !inside => return &line[..i],
            _ => {}
        }
    }
    line
}

/// A label `y` (written `lab`) as `labels` reads it (logistic: −1 is 0), or why it is refused.
pub(crate) fn check_label(y: f64, lab: &str, labels: Labels) -> Result<f64, String> {
    if !y.is_finite() {
        return Err(format!("label `{lab}` is not finite"));
    }
    match labels {
        Labels::Real => Ok(y),
        Labels::Binary => match y {
            1.0 => Ok(1.0),
            0.0 | -1.0 => Ok(0.0),
            _ => Err(format!("label `{lab}` is not 0, 1 or -1 (model.loss = \"logistic\")")),
        },
        Labels::Classes(c) if y.fract() != 0.0 || y < 0.0 || y >= c as f64 => {
            Err(format!("label `{lab}` is not a class 0..{} ({c} classes in [model])", c - 1))
        }
        Labels::Classes(_) => Ok(y),
    }
}

#[cfg(test)]
mod tests {
    use super::uncomment;

    #[test]
    fn a_comment_starts_at_the_first_hash_outside_quotes() {
        assert_eq!(uncomment("1,2 # note", false), "1,2 ");
        assert_eq!(uncomment("1,\"a # b\",2 # note", false), "1,\"a ");
        assert_eq!(uncomment("1,\"a # b\",2 # note", true), "1,\"a # b\",2 ");
        assert_eq!(uncomment("1,\"say \"\"#1\"\"\",2", true), "1,\"say \"\"#1\"\"\",2");
        assert_eq!(uncomment("1,\"open # all", true), "1,\"open # all");
        assert_eq!(uncomment("# all", true), "");
    }
}
