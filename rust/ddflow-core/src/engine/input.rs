//! Inputs: updates pushed into the dataflow, checked against each input's frontier and
//! dtypes (and, for a first batch, against the dtypes of the columns the plan links its
//! columns with: `dtype_links.rs`), and the frontiers the caller advances.

use super::column::{self, Column, Msg, Schema};
use super::dtype_links::DtypeLinks;
use super::exchange;
use super::plan::{Op, Plan};
use super::Engine;
use crate::encoding::DType;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use crate::updates::{TimeColumn, Updates};
use std::sync::Arc;

/// State of one input of the dataflow.
#[derive(Clone, Debug)]
pub(super) struct InputState {
    pub(super) frontier: Antichain<Time>,
    pub(super) closed: bool,
    pub(super) schema: Option<Schema>,
}

impl InputState {
    /// The state of node `op` if it is an input (or a constant, which the engine feeds as
    /// one): open, at the least time.
    pub(super) fn of(op: &Op) -> Option<InputState> {
        matches!(op, Op::Input { .. } | Op::Constant { .. }).then(|| InputState {
            frontier: Antichain::from_elem(Time::minimum()),
            closed: false,
            schema: None,
        })
    }
}

/// How errors name input `node`: `input "name"`, or its label when it has no name (or its
/// id when the plan has no such node: a caller's error, reported as such).
fn input_label(plan: &Plan, node: usize) -> String {
    match plan.nodes.get(node) {
        Some(spec) => match &spec.op {
            Op::Input { name } if !name.is_empty() => format!("input {name:?}"),
            _ => format!("input {}", spec.label),
        },
        None => format!("input node {node}"),
    }
}

impl Engine {
    pub(super) fn input_state(&mut self, node: usize) -> Result<&mut InputState> {
        let label = self
            .plan
            .nodes
            .get(node)
            .map(|n| n.label.clone())
            .unwrap_or_default();
        self.inputs
            .get_mut(node)
            .and_then(|s| s.as_mut())
            .ok_or_else(|| Error::Value(format!("node {node} ({label}) is not an input")))
    }

    pub(super) fn input_name(&self, node: usize) -> String {
        input_label(&self.plan, node)
    }

    /// Rebuilds the dtype links for a plan that grew (`attach`), with the dtypes the inputs'
    /// accepted batches fixed (in input order; what was accepted is never refused).
    pub(super) fn relink_dtypes(&mut self) {
        let mut links = DtypeLinks::of(&self.plan);
        for (node, st) in self.inputs.iter().enumerate() {
            if let Some(InputState {
                schema: Some(s), ..
            }) = st
            {
                let _ = links.fix_input(node, s, &|_, _| String::new());
            }
        }
        self.dtype_links = links;
    }

    /// Adds updates to an input. Every time must be in the future of the input's frontier;
    /// on any error nothing of the call is accepted.
    pub fn push(
        &mut self,
        node: usize,
        columns: Vec<Column>,
        times: Vec<Time>,
        diffs: Vec<i64>,
    ) -> Result<()> {
        let dtypes: Vec<DType> = columns.iter().map(|c| c.dtype).collect();
        let times = TimeColumn::from(times);
        self.check_push(node, &dtypes, &times, &diffs)?;
        let name = self.input_name(node);
        let rows = column::columns_to_rows(&columns, times.len(), &name)?;
        drop(columns);
        self.push_checked(node, dtypes, rows, times, diffs)
    }

    /// [`push`](Self::push) of updates already as rows (`dtypes.len()` words each, the
    /// input's columns in order): the bindings write each column into the rows as they
    /// convert it, so a large batch is never held as columns and rows at once.
    pub fn push_rows(
        &mut self,
        node: usize,
        dtypes: Vec<DType>,
        rows: Vec<u64>,
        times: TimeColumn,
        diffs: Vec<i64>,
    ) -> Result<()> {
        self.check_push(node, &dtypes, &times, &diffs)?;
        if rows.len() != times.len() * dtypes.len() {
            return Err(Error::Shape(format!(
                "{}: {} row words for {} updates of {} columns",
                self.input_name(node),
                rows.len(),
                times.len(),
                dtypes.len()
            )));
        }
        self.push_checked(node, dtypes, rows, times, diffs)
    }

    /// The checks of a push that do not need the rows: the input, its state, the number of
    /// columns and diffs, the dtypes against earlier batches, the times against its frontier.
    fn check_push(
        &mut self,
        node: usize,
        schema: &[DType],
        times: &TimeColumn,
        diffs: &[i64],
    ) -> Result<()> {
        let state = self.input_state(node)?.clone(); // first: refuses a node id out of range
        let (closed, frontier, fixed) = (state.closed, &state.frontier, &state.schema);
        let name = input_label(&self.plan, node);
        let ncols = self.plan.nodes[node].columns.len();
        if closed {
            return Err(Error::Time(format!("{name} is closed")));
        }
        if schema.len() != ncols {
            return Err(Error::Shape(format!(
                "{name}: {} columns given, the input has {ncols}",
                schema.len()
            )));
        }
        let n = times.len();
        if diffs.len() != n {
            return Err(Error::Shape(format!(
                "{name}: {n} times but {} diffs",
                diffs.len()
            )));
        }
        if let Some(s) = fixed {
            if **s != schema {
                let cols = &self.plan.nodes[node].columns;
                let (i, _) = s
                    .iter()
                    .zip(schema)
                    .enumerate()
                    .find(|(_, (a, b))| a != b)
                    .unwrap_or((0, (&s[0], &s[0])));
                return Err(Error::Type(format!(
                    "{name}: column {:?} has dtype {}, but earlier updates fixed it to {}",
                    cols.get(i).cloned().unwrap_or_default(),
                    schema[i].name(),
                    s[i].name()
                )));
            }
        }
        // One time for the whole batch (a load): one comparison with the frontier.
        let mut last = None;
        for t in times {
            if last == Some(t) {
                continue;
            }
            last = Some(t);
            if !frontier.less_equal(t) {
                return Err(Error::Time(format!(
                    "{name}: update at time {t:?} is not in the future of the input frontier {frontier:?} (already advanced past it)"
                )));
            }
        }
        Ok(())
    }

    /// Accepts a checked push: fixes the input's dtypes on its first batch (refused if the
    /// plan links a column with one another input fixed differently) and delivers it.
    fn push_checked(
        &mut self,
        node: usize,
        schema: Vec<DType>,
        rows: Vec<u64>,
        times: TimeColumn,
        diffs: Vec<i64>,
    ) -> Result<()> {
        let state = self.input_state(node)?.clone();
        let ncols = schema.len();
        let n = times.len();
        let schema: Schema = match &state.schema {
            Some(s) => s.clone(),
            None => {
                // The first batch fixes the input's dtypes: refused here if a join, concat
                // or loop puts a column beside one another input fixed differently.
                let plan = &self.plan;
                let describe = |n: usize, c: usize| {
                    let col = plan.nodes[n].columns.get(c).cloned().unwrap_or_default();
                    format!("column {col:?} of {}", input_label(plan, n))
                };
                self.dtype_links.fix_input(node, &schema, &describe)?;
                Arc::new(schema)
            }
        };
        self.input_state(node)?.schema = Some(schema.clone());
        if n == 0 {
            return Ok(());
        }
        let msg = Msg {
            schema,
            upd: Updates {
                width: ncols,
                rows,
                times,
                diffs,
            },
        };
        let w = self.push_count % self.workers.len();
        self.push_count += 1;
        // Every consumer but the last gets a copy; the last takes the message itself.
        let consumers = self.consumers[node].clone();
        let mut msg = Some(msg);
        for (i, &(c, port)) in consumers.iter().enumerate() {
            let m = if i + 1 == consumers.len() {
                msg.take().expect("message")
            } else {
                msg.clone().expect("message")
            };
            self.workers[w].deliver(c, port, m);
        }
        exchange::flush(&mut self.workers);
        Ok(())
    }

    /// Advances an input's frontier to `time` (it may not go backwards).
    pub fn advance_input(&mut self, node: usize, time: Time) -> Result<()> {
        let name = self.input_name(node);
        let st = self.input_state(node)?;
        if st.closed {
            return Err(Error::Time(format!("{name} is closed")));
        }
        if !st.frontier.less_equal(&time) {
            return Err(Error::Time(format!(
                "{name}: cannot advance to {time:?}, which is not in the future of the current frontier {:?}",
                st.frontier
            )));
        }
        st.frontier = Antichain::from_elem(time);
        Ok(())
    }

    /// Closes an input: no more updates will arrive.
    pub fn close_input(&mut self, node: usize) -> Result<()> {
        let st = self.input_state(node)?;
        st.closed = true;
        st.frontier = Antichain::new();
        Ok(())
    }
}
