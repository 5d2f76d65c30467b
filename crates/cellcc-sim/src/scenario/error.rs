//! The scenario error and how it prints: one line, whatever text it quotes.

/// A scenario problem: where it is and what is wrong.
///
/// Displayed as one line, `file: location: message`. Every part may quote the user's
/// text (a file name, an unknown variant), so control characters in it are shown
/// escaped (`\n`, `\u{5}`) rather than breaking the line or the terminal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}: {}", one_line(file), one_line(location), one_line(message))]
pub struct ScenarioError {
    /// The scenario's name for messages (file path or `<scenario>`).
    pub file: String,
    /// Key path (`flows[1].scheme`) or `line N`.
    pub location: String,
    /// What is wrong and what was expected.
    pub message: String,
}

/// `text` with its control characters escaped, so that it prints on one line.
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return text.into();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}
