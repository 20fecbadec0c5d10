//! A bad command line (exit 2, nothing sent to a node), said in one line on stderr as every
//! failure of dlock's is, so that a script can show or log it whole.

use std::process::ExitCode;

use crate::exit;

/// A bad command line: one line on stderr, as every failure of dlock's (`--help` and
/// `--version` print as usual).
pub fn refuse(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(exit::USAGE));
    }
    eprintln!(
        "dlock: {} (dlock --help lists the options)",
        one_line(&e.render().to_string())
    );
    ExitCode::from(exit::USAGE)
}

/// Clap's message on one line: without the `error: ` label, the usage and the pointer to
/// `--help` that follow it; a tip kept after a `;`.
fn one_line(message: &str) -> String {
    let mut line = String::new();
    for piece in message.lines().map(str::trim) {
        if piece.starts_with("Usage:") || piece.starts_with("For more information") {
            break;
        }
        let piece = piece.strip_prefix("error: ").unwrap_or(piece);
        match piece {
            "" => {}
            tip if tip.starts_with("tip:") => line = format!("{line}; {tip}"),
            _ if line.is_empty() => line = piece.to_string(),
            _ => line = format!("{line} {piece}"),
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_usage_error_is_one_line() {
        let clap = "error: the following required arguments were not provided:\n  <RESOURCE>\n\nUsage: dlock run <RESOURCE> -- <CMD>...\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(clap),
            "the following required arguments were not provided: <RESOURCE>"
        );
        let tip = "error: unexpected argument '--x' found\n\n  tip: to pass '--x' as a value, use '-- --x'\n\nUsage: dlock status <RESOURCE>\n";
        assert_eq!(
            one_line(tip),
            "unexpected argument '--x' found; tip: to pass '--x' as a value, use '-- --x'"
        );
    }
}
