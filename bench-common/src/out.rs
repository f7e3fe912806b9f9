//! Standard output for the command-line programs.
//!
//! Owns: what happens when writing the program's report to stdout fails.
//! Rust ignores SIGPIPE, so `println!` panics when the reader has gone
//! away (`schbench … | head -1`). Here a closed reader ends the program at
//! once and quietly with status 141 — what a shell reports for a C tool
//! killed by SIGPIPE — and any other write error prints one line on stderr
//! and exits 1. Must not: restore SIGPIPE's default action (the programs
//! use pipes and sockets themselves, where a closed peer must stay an
//! `EPIPE` error, not kill the process), or write anywhere but stdout.

use std::fmt;
use std::io::{self, Write};

/// The exit status of a program whose stdout reader went away (128 + SIGPIPE).
pub const BROKEN_PIPE_STATUS: i32 = 141;

/// Writes `args` to stdout; on failure, ends the program ([`exit_on_error`]).
/// Use through [`out!`](crate::out!) and [`outln!`](crate::outln!).
pub fn print(args: fmt::Arguments<'_>) {
    if let Err(e) = io::stdout().lock().write_fmt(args) {
        exit_on_error(&e);
    }
}

/// Flushes stdout; on failure, ends the program ([`exit_on_error`]).
pub fn flush() {
    if let Err(e) = io::stdout().flush() {
        exit_on_error(&e);
    }
}

/// Ends the program after a failed write to stdout: quietly with
/// [`BROKEN_PIPE_STATUS`] if the reader went away, otherwise with a
/// message and status 1. Other threads are not waited for.
pub fn exit_on_error(e: &io::Error) -> ! {
    exit_if_broken_pipe(e);
    eprintln!("error: writing to standard output: {e}");
    std::process::exit(1)
}

/// Ends the program quietly with [`BROKEN_PIPE_STATUS`] if `e` says the
/// reader of stdout went away; returns otherwise. For callers that write
/// stdout through their own `Write` handle and turn other errors into
/// their own messages.
pub fn exit_if_broken_pipe(e: &io::Error) {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(BROKEN_PIPE_STATUS);
    }
}

/// Stdout, locked, for code that writes the report through a [`Write`]
/// handle (schbench's driver): a write or flush that finds the reader gone
/// ends the program there and then ([`exit_if_broken_pipe`]), before the
/// caller unwinds and waits for its workers; other errors are returned.
pub struct Stdout(io::StdoutLock<'static>);

/// Locks stdout for the life of the returned [`Stdout`].
pub fn lock() -> Stdout {
    Stdout(io::stdout().lock())
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).inspect_err(exit_if_broken_pipe)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().inspect_err(exit_if_broken_pipe)
    }
}

/// Ends the program for what clap returned instead of options. Help and
/// version text go to stdout like any report — through [`print()`], so a
/// closed reader (`schbench --help | head -1`) ends the program with
/// [`BROKEN_PIPE_STATUS`] instead of clap's silent 0 — and exit 0; usage
/// errors go to stderr with clap's status 2. On a terminal, clap prints
/// (with its colours) and exits itself.
pub fn exit_clap(e: clap::Error) -> ! {
    use std::io::IsTerminal;
    if e.use_stderr() || io::stdout().is_terminal() {
        e.exit()
    }
    print(format_args!("{}", e.render()));
    flush();
    std::process::exit(e.exit_code())
}

/// Runs `cmd` with a stdout whose reader has already gone away and returns
/// its output (stderr captured), for tests of the [`BROKEN_PIPE_STATUS`]
/// path.
///
/// The pipe's read end is closed before the child exists. Dropping a
/// piped `Command` stdout after `spawn` instead leaves a race: a child that
/// another test thread forks in that window holds a copy of the read end
/// until its `exec`, so a short report can land in the pipe's buffer and the
/// program exits 0. The window left here (between creating the pipe and
/// closing its read end) is far smaller; if a run still exits 0, it is
/// repeated, up to three runs in all, so a program that never reports 141
/// still fails its test.
pub fn run_with_stdout_gone(cmd: &mut std::process::Command) -> io::Result<std::process::Output> {
    let mut runs = 0;
    loop {
        let (reader, writer) = io::pipe()?;
        drop(reader);
        let out = cmd
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()?;
        runs += 1;
        if out.status.code() != Some(0) || runs == 3 {
            return Ok(out);
        }
    }
}

/// `print!` to stdout that ends the program cleanly when stdout is closed
/// (see [`mod@crate::out`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::print(::std::format_args!($($arg)*))
    };
}

/// `println!` to stdout that ends the program cleanly when stdout is
/// closed (see [`mod@crate::out`]).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::out::print(::std::format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::print(::std::format_args!("{}\n", ::std::format_args!($($arg)*)))
    };
}
