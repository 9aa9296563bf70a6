//! Workers that run ahead of each other: with several workers, each runs its own passes over
//! the plan in its own thread, and the workers meet only at a board of published
//! pointstamps (see "Workers" in `ENGINE.md`).
//!
//! The board holds, under one lock, every worker's pointstamps per node (times queued at
//! its input ports and times its operator holds), the messages workers send each other
//! (routed by key at `arrange` nodes), and each node's `reach_out`: a lower bound on the
//! times it may still emit. A worker, before it activates a node, takes the node's mail
//! and reads its input frontier from the upstream `reach_out`; after it, it publishes the
//! node's new pointstamps, the times it delivered to its own next nodes and to other
//! workers, and refreshes the node's `reach_out`; at the end of each of its passes it
//! recomputes every `reach_out` from the pointstamps alone (the fixed point of
//! `progress.rs`, which lets loops with nothing left in them close).
//!
//! Why this is safe while another worker is in the middle of an activation: a worker
//! publishes a node's pointstamps only after its activation, together with everything the
//! activation delivered, so until then the published ones still cover what it may emit;
//! a `reach_out` computed from valid bounds stays valid, since what a node may still emit
//! only shrinks. A worker that finds nothing to do waits for the board to change; when
//! every worker has found nothing to do at the same state of the board, the run has
//! stalled (done, or inputs not advanced far enough).
//!
//! Spilling and the memory limit's error need every worker at rest: a worker that finds
//! them due stops the run, the engine does the work, and (after a spill) starts it again.

use super::compaction::{compact_worker, CompactCtx};
use super::column::{Callbacks, Msg};
use super::dtype_links::DtypeLinks;
use super::plan::{Op, Plan};
use super::worker::{PassCtx, Worker};
use super::{progress, Engine};
use crate::error::{Error, Result};
use crate::lattice::{Antichain, PartialOrder, Time};
use crate::memory;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// How many times a worker with nothing to do checks for a change before it sleeps (a few
/// tens of microseconds).
const SPINS: usize = 1 << 11;

/// What a run works towards.
#[derive(Clone, Copy, Debug)]
pub(super) enum Goal {
    /// No capture or probe may still receive a time strictly less than this one.
    Until(Time),
    /// Every input is closed and nothing is left anywhere.
    Done,
    /// Nothing is left to do (a stall is the goal).
    Quiet,
}

/// How a run ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Ended {
    /// The goal holds.
    Reached,
    /// No worker can do anything more and the goal does not hold.
    Stalled,
    /// A worker ran the passes it was given.
    Passes,
}

/// Why the workers stopped (the first reason found wins).
enum Stop {
    Reached,
    Stalled,
    Passes,
    /// The live bytes passed the spill threshold.
    Spill,
    Failed(Error),
}

/// What a worker has to do (see [`Shared::work_of`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Work {
    Nothing,
    /// Only input frontiers moved: worth a pass once the other workers' passes moved them
    /// further (a pass per partial move costs activations that do a little each).
    Frontiers,
    Data,
}

/// A worker's pointstamps at one node.
#[derive(Clone, Default)]
struct Stamps {
    /// Times queued at each input port (before the node's summary).
    queued: Vec<Antichain<Time>>,
    /// Times the operator holds (buffered updates, scheduled work).
    held: Antichain<Time>,
}

/// What the workers share, under one lock.
struct Board {
    /// `reach_out[worker][node]`: a lower bound on the times the node may still emit on
    /// that worker.
    reach_out: Vec<Vec<Antichain<Time>>>,
    /// `stamps[worker][node]`.
    stamps: Vec<Vec<Stamps>>,
    /// Messages for `mail[worker][node][port]`, not yet taken by that worker (their times
    /// are already in its stamps).
    mail: Vec<Vec<Vec<Vec<Msg>>>>,
    /// Bumped whenever a `reach_out` moved or mail was sent: a waiting worker wakes on it.
    version: u64,
    /// Per worker, the version at which it found nothing to do (`None`: busy).
    idle: Vec<Option<u64>>,
    stop: Option<Stop>,
    /// Passes run by worker 0.
    passes: u64,
    /// Passes each worker ended.
    passes_done: Vec<u64>,
    /// Per worker, whether it waits for another's pass to end.
    pass_waiting: Vec<bool>,
}

impl Board {
    /// Whether a worker other than `w` is in a pass (neither idle nor waiting for a pass).
    fn others_busy(&self, w: usize) -> bool {
        (0..self.idle.len()).any(|o| o != w && self.idle[o].is_none() && !self.pass_waiting[o])
    }
}

/// The board and what every worker reads while the run lasts.
struct Shared<'a> {
    board: Mutex<Board>,
    moved: Condvar,
    /// The board's version, readable without the lock (`u64::MAX` once the run stops).
    version: AtomicU64,
    plan: &'a Plan,
    ports: &'a [Vec<Vec<usize>>],
    consumers: &'a [Vec<(usize, usize)>],
    trace_of: &'a [Option<usize>],
    callbacks: &'a dyn Callbacks,
    dtype_links: &'a DtypeLinks,
    handles: &'a [Option<(usize, Antichain<Time>)>],
    /// Per node, the frontier of an open input (empty otherwise).
    input_frontiers: Vec<Antichain<Time>>,
    inputs_closed: bool,
    /// The nodes whose output the user sees: captures, probes, `inspect` callbacks and
    /// arrangements with open trace handles (every node when there are none).
    seen: Vec<usize>,
    /// Per node, whether it receives data routed by key from every worker (an `arrange`).
    exchanges: Vec<bool>,
    /// Per node whose fresh batches others read (an `arrange`, an `import_trace`): the
    /// reading `(node, port)`s. A fresh batch is a pointstamp of its readers until they
    /// ran: it is not queued anywhere, and its producer's frontier has moved past it.
    readers: Vec<Vec<(usize, usize)>>,
    memory_limit: Option<usize>,
    /// Live bytes at which a worker stops the run for a spill.
    spill_at: Option<usize>,
    write_through: super::spill::WriteThrough,
    goal: Goal,
    max_passes: usize,
}

impl Shared<'_> {
    fn lock(&self) -> MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the board changed and wakes the workers waiting for a change.
    fn bump(&self, board: &mut Board) {
        board.version += 1;
        self.version.store(board.version, Ordering::Release);
        if board.idle.iter().any(|i| i.is_some()) || board.pass_waiting.iter().any(|&p| p) {
            self.moved.notify_all();
        }
    }

    /// What worker `w` has to do at the board as it is: data (queued input, its mail taken
    /// first, or work left from an earlier activation), only input frontiers that moved
    /// since nodes' last activations, or nothing.
    fn work_of(&self, board: &mut Board, w: &mut Worker) -> Work {
        let mut work = Work::Nothing;
        for node in 0..self.plan.nodes.len() {
            take_mail(board, w, node);
            if w.has_input(node) || w.ops[node].has_work() {
                return Work::Data;
            }
            if work == Work::Nothing && w.last_frontier[node] != self.frontier_in(board, w.index, node)
            {
                if std::env::var_os("DDFLOW_DEBUG_RA").is_some() {
                    eprintln!("w{} node {node} last {:?} now {:?}", w.index, w.last_frontier[node], self.frontier_in(board, w.index, node));
                }
                work = Work::Frontiers;
            }
        }
        work
    }

    /// Waits for the board to change from `version` (or the run to stop): spins a little
    /// first, as the other workers' next change is often microseconds away, then sleeps.
    fn wait<'b>(&'b self, board: MutexGuard<'b, Board>, version: u64) -> MutexGuard<'b, Board> {
        drop(board);
        for _ in 0..SPINS {
            if self.version.load(Ordering::Acquire) != version {
                break;
            }
            std::hint::spin_loop();
        }
        let board = self.lock();
        self.moved
            .wait_while(board, |b| b.version == version && b.stop.is_none())
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Records why the run stops (unless a reason is already recorded) and wakes everyone.
    fn stop(&self, board: &mut Board, why: Stop) {
        if board.stop.is_none() {
            board.stop = Some(why);
        }
        self.version.store(u64::MAX, Ordering::Release);
        self.moved.notify_all();
    }

    /// The frontier of `node`'s inputs on worker `w`: what its upstream nodes may still
    /// emit on `w`, or on any worker where `node` receives data routed by key.
    fn frontier_in(&self, board: &Board, w: usize, node: usize) -> Antichain<Time> {
        let mut f = Antichain::new();
        self.add_frontier_in(&board.reach_out, w, node, &mut f);
        f
    }

    /// Adds the frontier of `node`'s inputs on worker `w`, from `reach`, to `f`; returns
    /// whether `f` grew.
    fn add_frontier_in(
        &self,
        reach: &[Vec<Antichain<Time>>],
        w: usize,
        node: usize,
        f: &mut Antichain<Time>,
    ) -> bool {
        let mut grew = false;
        let from: std::ops::Range<usize> = if self.exchanges[node] {
            0..reach.len()
        } else {
            w..w + 1
        };
        for (port, ups) in self.ports[node].iter().enumerate() {
            for &u in ups {
                for r in &reach[from.clone()] {
                    for t in r[u].elements() {
                        if let Some(x) = progress::summarize(self.plan, node, port, t) {
                            grew |= f.insert(x);
                        }
                    }
                }
            }
        }
        grew
    }

    /// The times worker `w` holds at `node` (its stamps, after the node's summary for the
    /// queued ones) and the input's frontier, into `r`.
    fn held_at(&self, board: &Board, w: usize, node: usize, r: &mut Antichain<Time>) {
        let s = &board.stamps[w][node];
        for t in s.held.elements() {
            r.insert_ref(t);
        }
        for (port, q) in s.queued.iter().enumerate() {
            for t in q.elements() {
                if let Some(x) = progress::summarize(self.plan, node, port, t) {
                    r.insert(x);
                }
            }
        }
        for t in self.input_frontiers[node].elements() {
            r.insert_ref(t);
        }
    }

    /// Recomputes `reach_out[w][node]` from `w`'s stamps at the node, its input's frontier
    /// and its input frontier. Returns whether it moved.
    fn refresh(&self, board: &mut Board, w: usize, node: usize) -> bool {
        let mut r = Antichain::new();
        self.held_at(board, w, node, &mut r);
        self.add_frontier_in(&board.reach_out, w, node, &mut r);
        if r != board.reach_out[w][node] {
            board.reach_out[w][node] = r;
            true
        } else {
            false
        }
    }

    /// Recomputes every `reach_out` from the pointstamps alone (the least fixed point, as
    /// `progress::reach_into`, over each worker's copy of the plan, joined where data is
    /// routed by key). Returns whether any moved.
    fn fixpoint(&self, board: &mut Board) -> bool {
        let n = self.plan.nodes.len();
        let peers = board.stamps.len();
        let mut reach: Vec<Vec<Antichain<Time>>> = vec![vec![Antichain::new(); n]; peers];
        for (w, r) in reach.iter_mut().enumerate() {
            for (node, a) in r.iter_mut().enumerate() {
                self.held_at(board, w, node, a);
            }
        }
        loop {
            let mut changed = false;
            for w in 0..peers {
                for node in 0..n {
                    let mut a = std::mem::take(&mut reach[w][node]);
                    changed |= self.add_frontier_in(&reach, w, node, &mut a);
                    reach[w][node] = a;
                }
            }
            if !changed {
                break;
            }
        }
        if reach != board.reach_out {
            board.reach_out = reach;
            true
        } else {
            false
        }
    }

    /// Whether the goal holds on the board (after a fixed point).
    fn goal_holds(&self, board: &Board) -> bool {
        match self.goal {
            // No node the user sees may still emit a time before `t` (a `reach_out` holds
            // the times queued at its node and its fresh batches).
            Goal::Until(t) => board.reach_out.iter().all(|r| {
                self.seen
                    .iter()
                    .all(|&node| !r[node].elements().iter().any(|f| f.less_than(&t)))
            }),
            Goal::Done => {
                self.inputs_closed
                    && board.reach_out.iter().flatten().all(|r| r.is_empty())
            }
            Goal::Quiet => false,
        }
    }
}

/// The pointstamps `w` holds at `node`, read from its queues and its operator.
fn stamps_of(w: &Worker, node: usize) -> Stamps {
    let mut s = Stamps::default();
    w.pointstamps(node, &mut s.queued, &mut s.held);
    s
}

/// The least times of `msg`'s updates.
fn times_of(msg: &Msg) -> Antichain<Time> {
    let mut a = Antichain::new();
    for t in &msg.upd.times {
        a.insert_ref(t);
    }
    a
}

/// Adds `times` to the stamps of `node`'s `port`.
fn add_queued(s: &mut Stamps, port: usize, times: &Antichain<Time>) {
    if s.queued.len() <= port {
        s.queued.resize(port + 1, Antichain::new());
    }
    for t in times.elements() {
        s.queued[port].insert_ref(t);
    }
}

/// Moves `w`'s mail for `node` into its input queues.
fn take_mail(board: &mut Board, w: &mut Worker, node: usize) {
    for (port, q) in board.mail[w.index][node].iter_mut().enumerate() {
        if !q.is_empty() {
            w.inbox[node][port].append(q);
        }
    }
}

/// For each node, the `(node, port)`s that read its fresh batches (see `Shared::readers`).
fn readers_of(plan: &Plan, trace_of: &[Option<usize>], w: &Worker) -> Vec<Vec<(usize, usize)>> {
    let mut readers = vec![Vec::new(); plan.nodes.len()];
    for (c, spec) in plan.nodes.iter().enumerate() {
        if !w.ops[c].reads_arrangements() {
            continue;
        }
        for (port, &i) in spec.inputs.iter().enumerate() {
            for source in [trace_of[i], w.import_of[i]].into_iter().flatten() {
                if !readers[source].contains(&(c, port)) {
                    readers[source].push((c, port));
                }
            }
        }
    }
    readers
}

/// One worker's passes until the run stops. A pass once started runs to its end, so that
/// the fresh batches of its arrangements reach their readers.
fn run_worker(sh: &Shared<'_>, w: &mut Worker, idle_nodes: &mut Vec<usize>) {
    let (dir, above, min_bytes) = &sh.write_through;
    let _write_through = (!crate::trace::spill::write_through_set())
        .then(|| crate::trace::spill::WriteThroughScope::new(dir.clone(), *above, *min_bytes));
    let ctx = PassCtx {
        plan: sh.plan,
        callbacks: sh.callbacks,
        consumers: sh.consumers,
        trace_of: sh.trace_of,
        dtype_links: sh.dtype_links,
        memory_limit: sh.memory_limit,
        write_through: sh.write_through.clone(),
    };
    let compact_cx = CompactCtx {
        plan: sh.plan,
        consumers: sh.consumers,
        handles: sh.handles,
    };
    let n = sh.plan.nodes.len();
    // Queue lengths of a node's consumers before its activation: what it delivered
    // locally is what lies beyond them.
    let mut lens: Vec<(usize, usize, usize)> = Vec::new();
    let mut passes = 0usize;
    loop {
        {
            let mut b = sh.lock();
            if b.stop.is_some() {
                return;
            }
            if passes == sh.max_passes {
                sh.stop(&mut b, Stop::Passes);
                return;
            }
            if w.index == 0 {
                b.passes += 1;
            }
        }
        passes += 1;
        for f in w.fresh.iter_mut() {
            *f = None;
        }
        if !w.pending_snapshots.is_empty() {
            let imports = w.pending_snapshots.clone();
            w.take_snapshots(sh.trace_of);
            let mut b = sh.lock();
            for import in imports {
                if let Some(a) = w.fresh[import].as_ref().map(|m| times_of(m)) {
                    for &(c, port) in &sh.readers[import] {
                        add_queued(&mut b.stamps[w.index][c], port, &a);
                    }
                }
            }
        }
        for node in 0..n {
            let f_in = {
                let mut b = sh.lock();
                take_mail(&mut b, w, node);
                sh.frontier_in(&b, w.index, node)
            };
            if !w.should_run(sh.plan, sh.trace_of, node, &f_in) {
                let mut b = sh.lock();
                if sh.refresh(&mut b, w.index, node) {
                    sh.bump(&mut b);
                }
                continue;
            }
            lens.clear();
            for &(c, port) in &sh.consumers[node] {
                lens.push((c, port, w.inbox[c][port].len()));
            }
            let ran = w.activate(&ctx, node, &f_in).and_then(|d| {
                memory::check_against(sh.memory_limit)
                    .map_err(|e| e.with_operator(&sh.plan.nodes[node].label))?;
                Ok(d)
            });
            match ran {
                Ok(_) => {}
                Err(e) => {
                    let mut b = sh.lock();
                    sh.stop(&mut b, Stop::Failed(e));
                    return;
                }
            }
            let idle = idle_nodes.contains(&node);
            if !compact_worker(&compact_cx, w, node, idle) && idle {
                idle_nodes.retain(|&x| x != node);
            }
            if matches!(sh.plan.nodes[node].op, Op::Arrange { .. }) {
                if let Some(schema) = w.traces[node].as_ref().and_then(|t| t.schema.clone()) {
                    sh.dtype_links.observe(node, &schema);
                }
            }
            // Dtypes that data sent to an arrangement shows are recorded before the data is
            // published: a worker that completes a time downstream (an outer join's padding
            // takes the other side's dtypes) then knows them, whichever worker sent it.
            for &(c, port, len) in &lens {
                if matches!(sh.plan.nodes[c].op, Op::Arrange { .. }) {
                    for m in &w.inbox[c][port][len..] {
                        sh.dtype_links.observe(c, &m.schema);
                    }
                }
            }
            for (_, c, _, m) in &w.outbox {
                if matches!(sh.plan.nodes[*c].op, Op::Arrange { .. }) {
                    sh.dtype_links.observe(*c, &m.schema);
                }
            }
            // What the activation delivered, read outside the lock.
            let local: Vec<(usize, usize, Antichain<Time>)> = lens
                .iter()
                .filter(|&&(c, port, len)| w.inbox[c][port].len() > len)
                .map(|&(c, port, len)| {
                    let mut a = Antichain::new();
                    for m in &w.inbox[c][port][len..] {
                        for t in m.upd.times.iter() {
                            a.insert_ref(t);
                        }
                    }
                    (c, port, a)
                })
                .collect();
            let fresh = w.fresh[node].as_ref().map(|m| times_of(m));
            let sent: Vec<(usize, usize, usize, Antichain<Time>, Msg)> = w
                .outbox
                .drain(..)
                .map(|(target, c, port, m)| (target, c, port, times_of(&m), m))
                .collect();
            let spill = sh.spill_at.is_some_and(|at| memory::live_bytes() >= at);
            let mut b = sh.lock();
            // The node's own stamps are read afresh, its mail taken first (mail's times are
            // in the stamps, and would be lost from them otherwise).
            take_mail(&mut b, w, node);
            b.stamps[w.index][node] = stamps_of(w, node);
            for (c, port, a) in &local {
                add_queued(&mut b.stamps[w.index][*c], *port, a);
            }
            if let Some(a) = &fresh {
                for &(c, port) in &sh.readers[node] {
                    add_queued(&mut b.stamps[w.index][c], port, a);
                }
            }
            let mailed = !sent.is_empty();
            for (target, c, port, a, m) in sent {
                add_queued(&mut b.stamps[target][c], port, &a);
                b.mail[target][c][port].push(m);
            }
            if sh.refresh(&mut b, w.index, node) || mailed {
                sh.bump(&mut b);
            }
            if spill {
                sh.stop(&mut b, Stop::Spill);
            }
        }
        let mut b = sh.lock();
        if b.stop.is_some() {
            return;
        }
        if sh.fixpoint(&mut b) {
            sh.bump(&mut b);
        }
        if sh.goal_holds(&b) {
            sh.stop(&mut b, Stop::Reached);
            return;
        }
        b.passes_done[w.index] += 1;
        sh.bump(&mut b);
        loop {
            let work = sh.work_of(&mut b, w);
            if work == Work::Data || (work == Work::Frontiers && !b.others_busy(w.index)) {
                break;
            }
            let v = b.version;
            if work == Work::Nothing {
                b.idle[w.index] = Some(v);
                if b.idle.iter().all(|i| *i == Some(v)) {
                    sh.stop(&mut b, Stop::Stalled);
                    return;
                }
                // Others waiting for this worker's pass need not wait any more.
                sh.moved.notify_all();
                b = sh.wait(b, v);
                b.idle[w.index] = None;
            } else {
                // Only frontiers moved: wait for another worker to end its pass (or to stop
                // working), so that the next pass acts on their further move.
                let done = b.passes_done.clone();
                b.pass_waiting[w.index] = true;
                sh.moved.notify_all();
                b = sh
                    .moved
                    .wait_while(b, |b| {
                        b.stop.is_none() && b.passes_done == done && b.others_busy(w.index)
                    })
                    .unwrap_or_else(|e| e.into_inner());
                b.pass_waiting[w.index] = false;
            }
            if b.stop.is_some() {
                return;
            }
        }
    }
}

impl Engine {
    /// Runs the workers ahead of each other (see the module docs) until `goal` holds, no
    /// worker can do more, or a worker ran `max_passes` passes.
    pub(super) fn run_ahead(&mut self, goal: Goal, max_passes: usize) -> Result<Ended> {
        loop {
            self.check_not_stopped()?;
            let stop = self.run_ahead_once(goal, max_passes)?;
            match stop {
                Stop::Reached => {
                    if matches!(goal, Goal::Until(_)) {
                        self.release_idle();
                    }
                    return Ok(Ended::Reached);
                }
                Stop::Stalled => return Ok(Ended::Stalled),
                Stop::Passes => return Ok(Ended::Passes),
                Stop::Spill => self.spill_if_needed()?,
                Stop::Failed(e) => return Err(self.stop_on_memory_limit(e)),
            }
        }
    }

    /// The threads the workers other than the first run in (built at the first run).
    fn crew(&mut self) -> Result<&rayon::ThreadPool> {
        if self.crew.is_none() {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(self.workers.len() - 1)
                .thread_name(|i| format!("ddflow-worker-{}", i + 1))
                .build()
                .map_err(|e| Error::Internal(format!("cannot start worker threads: {e}")))?;
            self.crew = Some(pool);
        }
        Ok(self.crew.as_ref().expect("built above"))
    }

    /// One run of the workers, from the exact frontiers to the first reason to stop; the
    /// workers' mail is back in their queues and the frontiers exact when it returns.
    fn run_ahead_once(&mut self, goal: Goal, max_passes: usize) -> Result<Stop> {
        self.compute_frontiers();
        self.crew()?;
        let n = self.plan.nodes.len();
        let peers = self.workers.len();
        let board = Board {
            reach_out: vec![self.reach_out.clone(); peers],
            stamps: self
                .workers
                .iter()
                .map(|w| (0..n).map(|node| stamps_of(w, node)).collect())
                .collect(),
            mail: self
                .workers
                .iter()
                .map(|w| w.inbox.iter().map(|ports| vec![Vec::new(); ports.len()]).collect())
                .collect(),
            version: 0,
            idle: vec![None; peers],
            stop: None,
            passes: 0,
            passes_done: vec![0; peers],
            pass_waiting: vec![false; peers],
        };
        let input_frontiers: Vec<Antichain<Time>> = (0..n)
            .map(|node| match self.inputs.get(node) {
                Some(Some(st)) => st.frontier.clone(),
                _ => Antichain::new(),
            })
            .collect();
        let mut idle_nodes: Vec<Vec<usize>> = vec![Vec::new(); peers];
        for &(w, node) in &self.idle_merges {
            idle_nodes[w].push(node);
        }
        let spill_at = self.memory_limit.map(|limit| {
            (limit / 100 * super::spill::SPILL_AT_PERCENT).max(memory::live_bytes() + limit / 64)
        });
        let mut seen: Vec<usize> = self
            .plan
            .nodes
            .iter()
            .filter(|n| matches!(n.op, Op::Capture | Op::Probe | Op::InspectPy { .. }))
            .map(|n| n.id)
            .chain(self.handles.iter().flatten().map(|(node, _)| *node))
            .collect();
        if seen.is_empty() {
            seen = (0..n).collect();
        }
        let exchanges = self.workers[0]
            .ops
            .iter()
            .map(|op| op.exchange_key().is_some())
            .collect();
        let readers = readers_of(&self.plan, &self.trace_of, &self.workers[0]);
        let inputs_closed = self.inputs.iter().flatten().all(|s| s.closed);
        let write_through = self.write_through();
        let Engine {
            plan,
            ports,
            consumers,
            trace_of,
            workers,
            dtype_links,
            callbacks,
            handles,
            memory_limit,
            crew,
            ..
        } = self;
        let sh = Shared {
            board: Mutex::new(board),
            moved: Condvar::new(),
            version: AtomicU64::new(0),
            plan,
            ports,
            consumers,
            trace_of,
            callbacks: &**callbacks,
            dtype_links,
            handles,
            input_frontiers,
            inputs_closed,
            seen,
            exchanges,
            readers,
            memory_limit: *memory_limit,
            spill_at,
            write_through,
            goal,
            max_passes,
        };
        let crew = crew.as_ref().expect("built above");
        let (first, rest) = workers.split_first_mut().expect("several workers");
        let (first_idle, rest_idle) = idle_nodes.split_first_mut().expect("several workers");
        crew.in_place_scope(|s| {
            for (w, idle) in rest.iter_mut().zip(rest_idle.iter_mut()) {
                let sh = &sh;
                s.spawn(move |_| run_worker(sh, w, idle));
            }
            run_worker(&sh, first, first_idle);
        });
        let mut board = sh.board.into_inner().unwrap_or_else(|e| e.into_inner());
        for (w, mail) in self.workers.iter_mut().zip(board.mail) {
            for (node, ports) in mail.into_iter().enumerate() {
                for (port, mut q) in ports.into_iter().enumerate() {
                    w.inbox[node][port].append(&mut q);
                }
            }
        }
        self.passes += board.passes;
        self.idle_merges = idle_nodes
            .into_iter()
            .enumerate()
            .flat_map(|(w, nodes)| nodes.into_iter().map(move |node| (w, node)))
            .collect();
        self.trim_logs();
        self.compute_frontiers();
        self.compute_frontiers_in();
        Ok(board.stop.take().unwrap_or(Stop::Stalled))
    }
}
