//! A bare pipelining RESP connection for load generation: a batch of commands is encoded once
//! and written as it is, and the replies are read back and checked without building values, so
//! that on a 2-core machine the load generator leaves as much CPU as possible to redis-server.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

/// What a reply must be; anything else (an error above all) stops the benchmark with a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// A positive integer (a fencing token).
    Token,
    /// The integer 1.
    One,
    /// `+OK`.
    Ok,
    /// A nil bulk string.
    Nil,
}

/// RESP encoding of one command.
pub fn encode(args: &[&str], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

/// A batch encoded once: its bytes and what each reply must be, in order.
#[derive(Clone, Default)]
pub struct Batch {
    bytes: Vec<u8>,
    expect: Vec<Expect>,
}

impl Batch {
    pub fn push(&mut self, args: &[&str], expect: Expect) {
        encode(args, &mut self.bytes);
        self.expect.push(expect);
    }

    pub fn len(&self) -> usize {
        self.expect.len()
    }

    pub fn is_empty(&self) -> bool {
        self.expect.is_empty()
    }
}

/// One TCP connection to a node.
pub struct RawConnection {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    line: Vec<u8>,
}

impl RawConnection {
    pub fn connect(port: u16) -> RawConnection {
        let writer = TcpStream::connect(("127.0.0.1", port)).expect("connect to redis-server");
        writer.set_nodelay(true).expect("TCP_NODELAY");
        let reader = BufReader::with_capacity(1 << 16, writer.try_clone().expect("clone socket"));
        RawConnection {
            writer,
            reader,
            line: Vec::new(),
        }
    }

    /// Sends the batch in one write and reads and checks every reply.
    pub fn run(&mut self, batch: &Batch) {
        self.writer
            .write_all(&batch.bytes)
            .expect("write a batch to redis-server");
        for (i, expect) in batch.expect.iter().enumerate() {
            self.check_reply(*expect, i);
        }
    }

    fn check_reply(&mut self, expect: Expect, index: usize) {
        self.line.clear();
        self.reader
            .read_until(b'\n', &mut self.line)
            .expect("read a reply from redis-server");
        let line = String::from_utf8_lossy(&self.line).trim_end().to_string();
        let ok = match (expect, line.as_bytes().first()) {
            (Expect::Token, Some(b':')) => line[1..].parse::<i64>().is_ok_and(|t| t > 0),
            (Expect::One, _) => line == ":1",
            (Expect::Ok, _) => line == "+OK",
            (Expect::Nil, _) => line == "$-1",
            _ => false,
        };
        assert!(
            ok,
            "reply {index} of a batch: expected {expect:?}, got {line:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_a_command_as_resp() {
        let mut out = Vec::new();
        encode(&["SET", "k", "v"], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
    }
}
