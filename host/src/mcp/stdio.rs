//! `qmd mcp` over stdio: rmcp's newline-delimited transport, with JSON-RPC's
//! answers to lines that are not messages. rmcp drops a line that is not
//! JSON and answers JSON that is not a message with an error object that
//! has no `id`; JSON-RPC 2.0 wants `{"jsonrpc":"2.0","id":null,"error":…}`
//! with -32700 (Parse error) and -32600 (Invalid Request) respectively.
//!
//! Two small tasks sit between the process's streams and rmcp:
//! - the filter reads stdin line by line, forwards every line that is a
//!   client message (or blank) to rmcp and answers the others itself;
//! - the writer copies rmcp's output to stdout a whole line at a time and
//!   puts the filter's answers between those lines, never inside one.
//!
//! A client that echoed such an answer back as garbage could loop; a valid
//! JSON-RPC error object gives a conforming client nothing to echo.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::io::{DuplexStream, duplex};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// rmcp's transport over stdin/stdout behind the filter, and the writer
/// task: await it once the service has ended so its last answers reach
/// stdout.
pub fn transport() -> (AsyncRwTransport<RoleServer, DuplexStream, DuplexStream>, JoinHandle<()>) {
    filtered(tokio::io::stdin(), tokio::io::stdout())
}

/// How long the last answers may take to reach stdout at exit.
pub const DRAIN: Duration = Duration::from_secs(5);

fn filtered<R, W>(read: R, write: W) -> (AsyncRwTransport<RoleServer, DuplexStream, DuplexStream>, JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_in) = duplex(64 * 1024);
    let (rmcp_out, from_rmcp) = duplex(64 * 1024);
    // Bounded: a flood of bad lines waits for its answers to be written.
    let (answers_tx, answers) = mpsc::channel(64);
    tokio::spawn(filter(BufReader::new(read), to_rmcp, answers_tx));
    let writer = tokio::spawn(write_out(BufReader::new(from_rmcp), answers, write));
    (AsyncRwTransport::new_server(rmcp_in, rmcp_out), writer)
}

/// stdin → rmcp, answering the lines that are not client messages.
async fn filter<R: AsyncBufRead + Unpin>(mut read: R, mut to_rmcp: DuplexStream, answers: mpsc::Sender<Vec<u8>>) {
    let limit = DEFAULT_MAX_LINE_LENGTH as u64 + 1; // +1 to tell an overlong line
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut read).take(limit).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") {
            if line.len() as u64 >= limit {
                // Overlong: rmcp drops these too; skip the rest of it.
                eprintln!("MCP: dropped a message over {DEFAULT_MAX_LINE_LENGTH} bytes");
                if skip_line(&mut read).await {
                    continue;
                }
            }
            break; // an unterminated last line at EOF: not a message
        }
        match answer(&line) {
            Verdict::Forward => {
                if to_rmcp.write_all(&line).await.is_err() {
                    break;
                }
            }
            Verdict::Answer(answer) => {
                if answers.send(answer).await.is_err() {
                    break;
                }
            }
            Verdict::Drop => {}
        }
    }
    // Dropping `to_rmcp` gives rmcp its end of file.
}

/// Reads to the end of the current line; false at EOF or on an error.
async fn skip_line<R: AsyncBufRead + Unpin>(read: &mut R) -> bool {
    loop {
        let Ok(available) = read.fill_buf().await else { return false };
        if available.is_empty() {
            return false;
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        read.consume(take);
        if done {
            return true;
        }
    }
}

#[derive(Debug, PartialEq)]
enum Verdict {
    /// A client message, or a blank line (rmcp skips those).
    Forward,
    /// Not a message: this JSON-RPC error line goes back instead.
    Answer(Vec<u8>),
    /// A notification that is not a message rmcp knows: no answer, as
    /// JSON-RPC has none for notifications (rmcp ignores these too).
    Drop,
}

fn answer(line: &[u8]) -> Verdict {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Forward;
    }
    let Some(error) = super::invalid_message(line) else { return Verdict::Forward };
    let notification = serde_json::from_slice::<serde_json::Value>(line)
        .is_ok_and(|v| v.get("method").is_some_and(|m| m.is_string()) && v.get("id").is_none());
    if notification {
        return Verdict::Drop;
    }
    let mut bytes = error.to_string().into_bytes();
    bytes.push(b'\n');
    Verdict::Answer(bytes)
}

/// rmcp's output and the filter's answers → stdout, whole lines each.
async fn write_out<R, W>(mut from_rmcp: R, mut answers: mpsc::Receiver<Vec<u8>>, mut out: W)
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut line = Vec::new();
    let mut answers_open = true;
    loop {
        tokio::select! {
            // Answers first: one for a bad line is queued before the lines
            // after it reach rmcp, so it goes out before their answers.
            biased;
            answer = answers.recv(), if answers_open => match answer {
                Some(answer) => {
                    if out.write_all(&answer).await.is_err() || out.flush().await.is_err() {
                        return;
                    }
                }
                None => answers_open = false,
            },
            // Cancel-safe: a partly read line stays in `line` for the next turn.
            read = from_rmcp.read_until(b'\n', &mut line) => {
                let done = !matches!(read, Ok(n) if n > 0);
                if !line.is_empty() && (out.write_all(&line).await.is_err() || out.flush().await.is_err()) {
                    return;
                }
                line.clear();
                if done {
                    return; // rmcp has closed its output
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn error_of(verdict: Verdict) -> Value {
        let Verdict::Answer(bytes) = verdict else { panic!("{verdict:?}") };
        assert!(bytes.ends_with(b"\n"));
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn lines_that_are_not_messages_are_answered() {
        for line in [&b"garbage\n"[..], b"{\"jsonrpc\": \"2.0\",\n", b"\xff\xfe\n", b"[1,\n", b"{} {}\n"] {
            let json = error_of(answer(line));
            assert_eq!(json["error"]["code"], -32700, "{line:?}");
            assert_eq!(json["id"], Value::Null, "{line:?}");
            assert!(json.as_object().unwrap().contains_key("id"));
            assert!(json["error"]["message"].as_str().unwrap().starts_with("Parse error: "), "{json}");
        }
        for line in [&b"{}\n"[..], b"42\n", b"[]\n", b"{\"jsonrpc\":\"2.0\",\"id\":3}\n"] {
            let json = error_of(answer(line));
            assert_eq!(json["error"]["code"], -32600, "{line:?}");
        }
        assert_eq!(error_of(answer(b"{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}\n"))["id"], 3);
        for line in [&b"\n"[..], b"  \r\n", b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n"] {
            assert_eq!(answer(line), Verdict::Forward, "{line:?}");
        }
        assert_eq!(answer(b"{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":5}\n"), Verdict::Drop);
    }

    #[tokio::test]
    async fn answers_go_between_whole_lines() {
        let (mut rmcp, from_rmcp) = duplex(16);
        let (tx, rx) = mpsc::channel(4);
        let (out, mut stdout) = duplex(4096);
        let writer = tokio::spawn(write_out(BufReader::new(from_rmcp), rx, out));
        rmcp.write_all(b"{\"first\":").await.unwrap();
        tokio::task::yield_now().await;
        tx.send(b"{\"answer\":1}\n".to_vec()).await.unwrap();
        rmcp.write_all(b"1}\n{\"second\":2}\n").await.unwrap();
        drop(rmcp);
        writer.await.unwrap();
        let mut text = String::new();
        stdout.read_to_string(&mut text).await.unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort();
        assert_eq!(lines, ["{\"answer\":1}", "{\"first\":1}", "{\"second\":2}"]);
    }
}
