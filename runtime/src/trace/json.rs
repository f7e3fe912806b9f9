//! A collected trace and its Chrome trace-event JSON form.
//!
//! Owns: [`Trace`] (the events of one session, per worker), the run slices
//! derived from them ([`RunSlice`]), and the writer of the JSON that
//! Perfetto (ui.perfetto.dev) and `chrome://tracing` open. Must not: touch
//! the runtime (a `Trace` is plain data once collected).
//!
//! # The JSON
//!
//! One process, "eevdf-rt"; one track (`tid`) per worker, plus one for
//! wakers outside the runtime. On a worker's track:
//!
//! * a complete event (`"ph":"X"`) per task run, named `name#id` (or
//!   `task#id`), with `args` `{id, nice, out}` — `out` says why the run
//!   ended (yield, block, exit, preempt: tick / HRTICK / wakeup);
//! * an instant event (`"ph":"i"`) per wakeup the worker's thread did
//!   (`args`: wakee, waker task, target worker, how: local, inline,
//!   wakelist, in place, delayed wakelist), with a flow arrow
//!   (`"ph":"s"` … `"ph":"f"`) from it to the wakee's next run slice;
//! * instant events for preemptions, migrations (wake placement), steals
//!   and delayed dequeues.
//!
//! Timestamps are microseconds since the trace started.

use super::ring::Event;
use super::{how, kind, out};
use std::collections::HashMap;
use std::io::{self, Write};
use std::time::Duration;

/// The events of one trace session, from
/// [`Runtime::trace_stop`](crate::Runtime::trace_stop).
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// rt.trace_start(1 << 16).unwrap();
/// rt.block_on(|| {
///     let h = eevdf_rt::spawn(|| eevdf_rt::sleep(std::time::Duration::from_millis(1)));
///     h.join().unwrap();
/// });
/// let trace = rt.trace_stop();
/// assert!(trace.runs().len() >= 2);
/// let mut json = Vec::new();
/// trace.write_json(&mut json).unwrap();
/// assert!(json.starts_with(b"{\"traceEvents\":["));
/// ```
#[derive(Clone, Debug)]
pub struct Trace {
    start: u64,
    end: u64,
    /// Per worker, then the external track; each sorted by time.
    tracks: Vec<Vec<Event>>,
    names: HashMap<u64, Box<str>>,
    dropped: u64,
}

/// One run of a task on a worker, from [`Trace::runs`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunSlice {
    /// The worker it ran on.
    pub worker: usize,
    /// The task's id.
    pub task: u64,
    /// The task's name, if it has one.
    pub name: Option<String>,
    /// Its nice level then.
    pub nice: i32,
    /// When it started, since the trace started.
    pub start: Duration,
    /// How long it ran.
    pub duration: Duration,
    /// Why it stopped: "yield", "block", "exit", "preempt: tick",
    /// "preempt: HRTICK", "preempt: wakeup", "hand-off" (its worker was
    /// handed to another thread while the task ran on; the rest of that
    /// run is not the worker's), or "trace end".
    pub end_reason: &'static str,
}

impl Trace {
    pub(crate) fn empty(workers: usize) -> Self {
        Trace::new(0, 0, vec![Vec::new(); workers + 1], HashMap::new(), 0)
    }

    pub(crate) fn new(
        start: u64,
        end: u64,
        mut tracks: Vec<Vec<Event>>,
        names: HashMap<u64, Box<str>>,
        dropped: u64,
    ) -> Self {
        for t in &mut tracks {
            t.sort_by_key(|e| e.ts);
        }
        Trace {
            start,
            end,
            tracks,
            names,
            dropped,
        }
    }

    /// Number of workers (tracks, not counting the external one).
    pub fn workers(&self) -> usize {
        self.tracks.len() - 1
    }

    /// Number of events recorded.
    pub fn len(&self) -> usize {
        self.tracks.iter().map(Vec::len).sum()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events lost because a worker's ring was full (the oldest are
    /// overwritten) or the track of wakeups made outside the runtime was
    /// (it keeps the first `capacity`).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// How long the session lasted.
    pub fn duration(&self) -> Duration {
        Duration::from_nanos(self.end.saturating_sub(self.start))
    }

    /// Number of wakeup events.
    pub fn wakeups(&self) -> usize {
        self.tracks
            .iter()
            .flatten()
            .filter(|e| e.kind == kind::WAKEUP)
            .count()
    }

    fn name(&self, id: u64) -> Option<&str> {
        self.names.get(&id).map(|s| &**s)
    }

    fn rel(&self, ts: u64) -> Duration {
        Duration::from_nanos(ts.saturating_sub(self.start))
    }

    /// Every task run, per worker in time order. A run still going at the
    /// end of the trace ends there; one whose start was overwritten is left out.
    pub fn runs(&self) -> Vec<RunSlice> {
        let mut out = Vec::new();
        for (w, track) in self.tracks[..self.workers()].iter().enumerate() {
            let mut open: Option<&Event> = None;
            let close = |s: &Event, end: u64, why: &'static str, out: &mut Vec<RunSlice>| {
                out.push(RunSlice {
                    worker: w,
                    task: s.task,
                    name: self.name(s.task).map(str::to_string),
                    nice: s.nice as i32,
                    start: self.rel(s.ts),
                    duration: Duration::from_nanos(end.saturating_sub(s.ts)),
                    end_reason: why,
                });
            };
            for e in track {
                match e.kind {
                    kind::SWITCH_IN => {
                        if let Some(s) = open.take() {
                            close(s, e.ts, "trace end", &mut out);
                        }
                        open = Some(e);
                    }
                    kind::SWITCH_OUT => {
                        if let Some(s) = open.take().filter(|s| s.task == e.task) {
                            close(s, e.ts, out::NAMES[e.arg as usize], &mut out);
                        }
                    }
                    _ => {}
                }
            }
            if let Some(s) = open {
                close(s, self.end.max(s.ts), "trace end", &mut out);
            }
        }
        out
    }

    /// Writes the trace as Chrome trace-event JSON (see the module docs).
    pub fn write_json<W: Write>(&self, w: W) -> io::Result<()> {
        let mut w = io::BufWriter::new(w);
        let us = |d: Duration| d.as_nanos() as f64 / 1000.0;
        write!(w, "{{\"traceEvents\":[")?;
        write!(
            w,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{{\"name\":\"eevdf-rt\"}}}}"
        )?;
        let ext = self.workers();
        for t in 0..=ext {
            let name = if t == ext {
                "outside the runtime".to_string()
            } else {
                format!("worker {t}")
            };
            write!(
                w,
                ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":{t},\"args\":{{\"name\":\"{name}\"}}}}"
            )?;
            write!(
                w,
                ",\n{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":{t},\"args\":{{\"sort_index\":{t}}}}}"
            )?;
        }
        for r in self.runs() {
            let label = match &r.name {
                Some(n) => format!("{}#{}", escape(n), r.task),
                None => format!("task#{}", r.task),
            };
            write!(
                w,
                ",\n{{\"ph\":\"X\",\"name\":\"{label}\",\"cat\":\"run\",\"pid\":1,\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"id\":{},\"nice\":{},\"out\":\"{}\"}}}}",
                r.worker,
                us(r.start),
                us(r.duration),
                r.task,
                r.nice,
                r.end_reason
            )?;
        }
        // Instant events, and flows from each wakeup to the wakee's next run.
        let mut all: Vec<(usize, &Event)> = self
            .tracks
            .iter()
            .enumerate()
            .flat_map(|(t, evs)| evs.iter().map(move |e| (t, e)))
            .collect();
        all.sort_by_key(|(_, e)| e.ts);
        let mut pending: HashMap<u64, u64> = HashMap::new();
        let mut next_flow = 1u64;
        for (tid, e) in all {
            let ts = us(self.rel(e.ts));
            match e.kind {
                kind::WAKEUP => {
                    let id = next_flow;
                    next_flow += 1;
                    write!(
                        w,
                        ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"wakeup {}\",\"cat\":\"wakeup\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3},\"args\":{{\"wakee\":{},\"waker\":{},\"target\":{},\"how\":\"{}\"}}}}",
                        self.label(e.task),
                        e.task,
                        e.other,
                        e.aux,
                        how::NAMES[e.arg as usize]
                    )?;
                    write!(
                        w,
                        ",\n{{\"ph\":\"s\",\"id\":{id},\"name\":\"wakeup\",\"cat\":\"wakeup\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3}}}"
                    )?;
                    pending.insert(e.task, id);
                }
                kind::SWITCH_IN => {
                    if let Some(id) = pending.remove(&e.task) {
                        write!(
                            w,
                            ",\n{{\"ph\":\"f\",\"bp\":\"e\",\"id\":{id},\"name\":\"wakeup\",\"cat\":\"wakeup\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3}}}"
                        )?;
                    }
                }
                kind::SWITCH_OUT if e.arg >= out::TICK => {
                    let cat = if e.arg == out::HANDOFF {
                        "handoff"
                    } else {
                        "preempt"
                    };
                    write!(
                        w,
                        ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"{}\",\"cat\":\"{cat}\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3},\"args\":{{\"task\":{}}}}}",
                        out::NAMES[e.arg as usize],
                        e.task
                    )?;
                }
                kind::MIGRATE => {
                    write!(
                        w,
                        ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"migrate {}\",\"cat\":\"migrate\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3},\"args\":{{\"task\":{},\"from\":{},\"to\":{}}}}}",
                        self.label(e.task),
                        e.task,
                        e.other,
                        e.aux
                    )?;
                }
                kind::STEAL => {
                    write!(
                        w,
                        ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"steal {}\",\"cat\":\"steal\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3},\"args\":{{\"task\":{},\"from\":{}}}}}",
                        self.label(e.task),
                        e.task,
                        e.aux
                    )?;
                }
                kind::DELAYED_DEQUEUE => {
                    write!(
                        w,
                        ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"delayed dequeue {}\",\"cat\":\"delay\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3},\"args\":{{\"task\":{}}}}}",
                        self.label(e.task),
                        e.task
                    )?;
                }
                _ => {}
            }
        }
        write!(
            w,
            "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"dropped_events\":{}}}}}\n",
            self.dropped
        )?;
        w.flush()
    }

    /// Writes the JSON to the file at `path` (created or truncated).
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> io::Result<()> {
        self.write_json(std::fs::File::create(path)?)
    }

    fn label(&self, id: u64) -> String {
        match self.name(id) {
            Some(n) => format!("{}#{id}", escape(n)),
            None => format!("task#{id}"),
        }
    }
}

/// `s` as the inside of a JSON string.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ev(ts: u64, kind: u8, task: u64, arg: u8) -> Event {
        Event {
            ts,
            task,
            kind,
            arg,
            ..Event::default()
        }
    }

    #[test]
    fn runs_pair_switches_and_json_escapes_names() {
        let tracks = vec![
            vec![
                ev(1_000, kind::SWITCH_IN, 7, 0),
                ev(3_000, kind::SWITCH_OUT, 7, out::TICK),
                ev(3_000, kind::SWITCH_IN, 8, 0),
            ],
            vec![],
        ];
        let names = [(7, "a\"b".into())].into_iter().collect();
        let t = Trace::new(0, 5_000, tracks, names, 0);
        let runs = t.runs();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].duration, Duration::from_nanos(2_000));
        assert_eq!(runs[0].end_reason, "preempt: tick");
        assert_eq!(runs[1].end_reason, "trace end");
        let mut json = Vec::new();
        t.write_json(&mut json).unwrap();
        let s = String::from_utf8(json).unwrap();
        assert!(s.contains("a\\\"b#7"), "{s}");
        assert!(s.contains("\"ph\":\"X\""), "{s}");
    }
}
