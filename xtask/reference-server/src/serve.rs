//! The serving loop: edge-triggered `epoll` on non-blocking stdin.

use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use anyhow::{Context, Result};
use rustix::event::epoll;
use serde_json::{Value, json};

/// Serve stdin/stdout until stdin ends.
pub(crate) fn serve() -> Result<()> {
    let stdin = std::io::stdin();
    let stdin = stdin.as_fd();
    let mut stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let poll = edge_poll(stdin)?;
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        loop {
            let n = match rustix::io::read(stdin, &mut chunk[..]) {
                Ok(0) => {
                    // The input ended: a last line without its newline too.
                    pending.push(b'\n');
                    return answer_lines(&mut pending, &mut stdout);
                }
                Ok(n) => n,
                Err(rustix::io::Errno::AGAIN) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(error) => return Err(error).context("reading stdin"),
            };
            pending.extend_from_slice(&chunk[..n]);
            answer_lines(&mut pending, &mut stdout)?;
            // A short read emptied the pipe: the next write raises a new
            // edge, so wait for it.
            if n < chunk.len() {
                break;
            }
        }
        wait(&poll)?;
    }
}

/// Answer every whole line in `pending` and keep the rest.
fn answer_lines(pending: &mut Vec<u8>, out: &mut impl Write) -> Result<()> {
    let mut start = 0;
    while let Some(at) = pending[start..].iter().position(|b| *b == b'\n') {
        let line = &pending[start..start + at];
        start += at + 1;
        if let Some(mut answer) = answer(line)? {
            answer.push(b'\n');
            out.write_all(&answer).context("writing stdout")?;
        }
    }
    pending.drain(..start);
    Ok(())
}

/// The answer to one request line; `None` for a notification or a blank line.
fn answer(line: &[u8]) -> Result<Option<Vec<u8>>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let request: Value = serde_json::from_slice(line).context("a request line")?;
    let Some(id) = request.get("id") else {
        return Ok(None);
    };
    let result = match request["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "reference", "version": "0" },
        }),
        Some("tools/call") if request["params"]["name"] == "echo_echo" => {
            let text = request["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_uppercase();
            let output = json!({ "chars": text.chars().count(), "text": text });
            json!({
                "content": [{ "type": "text", "text": serde_json::to_string_pretty(&output)? }],
                "structuredContent": output,
                "isError": false,
            })
        }
        _ => {
            let error = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "not served here" } });
            return Ok(Some(serde_json::to_vec(&error)?));
        }
    };
    let response = json!({ "jsonrpc": "2.0", "id": id, "result": result });
    Ok(Some(serde_json::to_vec(&response)?))
}

/// An `epoll` instance with `stdin`, made non-blocking, registered
/// edge-triggered (as tokio registers it).
fn edge_poll(stdin: BorrowedFd<'_>) -> Result<OwnedFd> {
    rustix::io::ioctl_fionbio(stdin, true).context("making stdin non-blocking")?;
    let poll = epoll::create(epoll::CreateFlags::CLOEXEC).context("epoll_create1")?;
    epoll::add(
        &poll,
        stdin,
        epoll::EventData::new_u64(0),
        epoll::EventFlags::IN | epoll::EventFlags::ET,
    )
    .context("registering stdin with epoll (stdin must be a pipe)")?;
    Ok(poll)
}

/// Sleep until stdin has news (more data, or its end).
fn wait(poll: &OwnedFd) -> Result<()> {
    let mut events = [epoll::Event {
        flags: epoll::EventFlags::empty(),
        data: epoll::EventData::new_u64(0),
    }];
    loop {
        match epoll::wait(poll, &mut events[..], None) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(error) => return Err(error).context("epoll_wait"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_an_echo_call_as_the_bundled_tool_does_and_keeps_a_partial_line() {
        let call = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": { "name": "echo_echo", "arguments": { "text": "hello 3", "transform": "upper" } } });
        let mut input = serde_json::to_vec(&call).unwrap();
        input.push(b'\n');
        input.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n{\"jsonrpc\"",
        );
        let mut out = Vec::new();
        answer_lines(&mut input, &mut out).unwrap();
        assert_eq!(
            input, b"{\"jsonrpc\"",
            "the partial line waits for its rest"
        );
        let answers: Vec<Value> = out
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(answers.len(), 1, "the notification is not answered");
        assert_eq!(answers[0]["id"], 7);
        assert_eq!(answers[0]["result"]["isError"], false);
        assert_eq!(
            answers[0]["result"]["structuredContent"],
            json!({ "chars": 7, "text": "HELLO 3" })
        );
    }

    #[test]
    fn an_unknown_method_is_an_error_with_the_requests_id() {
        let answer = answer(br#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#)
            .unwrap()
            .unwrap();
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["id"], "a");
        assert_eq!(answer["error"]["code"], -32601);
    }
}
