//! Column dtype links: which columns of the plan must share a dtype because an operator puts
//! them side by side (the two sides of a join key, the inputs of a `concat`, a loop variable
//! with its source and result), followed through the operators that pass a column on
//! unchanged. An input's first batch fixes its columns' dtypes; a first batch whose dtype
//! disagrees with a linked column another input already fixed is refused by
//! `Engine::push`, naming both columns and the operator where they meet. Without this check
//! the batch was accepted and the join then failed at every later `run_until`: the
//! dataflow was wedged by data it had already taken.
//!
//! Links are conservative: a column computed by an expression, a Python function or an
//! aggregate starts a class of its own, so nothing is refused that could have run.
//!
//! Classes also tell the dtype of a column before data reaches it ([`DtypeLinks::dtype_of`]):
//! the dtype an input fixed, else the first dtype an arrangement of the class was seen with
//! at run time ([`DtypeLinks::observe`]; never used to refuse a batch). A `select` column
//! that is a null without a dtype (the padding of an outer join) takes it from there.

use super::plan::{JoinKind, Op, Plan};
use crate::encoding::DType;
use crate::error::{Error, Result};

/// Union-find over `(node, column)` slots, with the dtype each class was fixed to.
#[derive(Clone, Debug)]
pub struct DtypeLinks {
    /// First slot of each node.
    base: Vec<usize>,
    parent: Vec<usize>,
    /// Per class root: whether it holds a column of an input.
    has_input: Vec<bool>,
    /// Per class root: the operator where columns of two inputs first met.
    meets: Vec<Option<String>>,
    /// Per class root: the fixed dtype and the `(input node, column)` that fixed it.
    fixed: Vec<Option<(DType, usize, usize)>>,
    /// Per class root: the dtype an arrangement of the class was first seen with.
    observed: Vec<Option<DType>>,
}

impl DtypeLinks {
    /// The links of `plan`.
    pub(super) fn of(plan: &Plan) -> DtypeLinks {
        let mut base = Vec::with_capacity(plan.nodes.len());
        let mut total = 0;
        for node in &plan.nodes {
            base.push(total);
            total += node.columns.len();
        }
        let mut links = DtypeLinks {
            base,
            parent: (0..total).collect(),
            has_input: vec![false; total],
            meets: vec![None; total],
            fixed: vec![None; total],
            observed: vec![None; total],
        };
        for (n, node) in plan.nodes.iter().enumerate() {
            if matches!(node.op, Op::Input { .. } | Op::Constant { .. }) {
                for c in 0..node.columns.len() {
                    links.has_input[links.base[n] + c] = true;
                }
            }
        }
        for (n, node) in plan.nodes.iter().enumerate() {
            links.link_node(plan, n, &node.op);
        }
        links
    }

    fn width(&self, node: usize) -> usize {
        let end = self
            .base
            .get(node + 1)
            .copied()
            .unwrap_or(self.parent.len());
        end - self.base[node]
    }

    fn slot(&self, node: usize, col: usize) -> usize {
        self.base[node] + col
    }

    fn find(&mut self, mut s: usize) -> usize {
        while self.parent[s] != s {
            self.parent[s] = self.parent[self.parent[s]];
            s = self.parent[s];
        }
        s
    }

    /// Joins the classes of two slots, linked by operator `label`; where that puts columns
    /// of two inputs side by side for the first time, `label` is where they meet.
    fn union(&mut self, a: (usize, usize), b: (usize, usize), label: &str) {
        if a.1 >= self.width(a.0) || b.1 >= self.width(b.0) {
            return; // a column the plan does not have: no link
        }
        let (sa, sb) = (self.slot(a.0, a.1), self.slot(b.0, b.1));
        let (ra, rb) = (self.find(sa), self.find(sb));
        if ra == rb {
            return;
        }
        self.parent[rb] = ra;
        self.observed[ra] = self.observed[ra].or(self.observed[rb]);
        let both = self.has_input[ra] && self.has_input[rb];
        self.has_input[ra] |= self.has_input[rb];
        let m = self.meets[ra].take().or_else(|| self.meets[rb].take());
        self.meets[ra] = m.or_else(|| both.then(|| label.to_string()));
    }

    /// The root of slot `s`'s class (no path compression: for readers sharing the links).
    fn root(&self, mut s: usize) -> usize {
        while self.parent[s] != s {
            s = self.parent[s];
        }
        s
    }

    /// The dtype of column `col` of `node` as far as the plan and the data so far tell: the
    /// dtype an input fixed for its class, else the one an arrangement of the class was seen
    /// with; `None` while no data of the class has arrived.
    pub(super) fn dtype_of(&self, node: usize, col: usize) -> Option<DType> {
        if node >= self.base.len() || col >= self.width(node) {
            return None;
        }
        let r = self.root(self.slot(node, col));
        self.fixed[r].map(|(d, _, _)| d).or(self.observed[r])
    }

    /// Records the dtypes `schema` that the columns of `node` (an arrangement) were seen
    /// with, for classes that have none yet.
    pub(super) fn observe(&mut self, node: usize, schema: &[DType]) {
        let w = self.width(node).min(schema.len());
        for (c, &d) in schema.iter().enumerate().take(w) {
            let r = self.find(self.slot(node, c));
            if self.observed[r].is_none() {
                self.observed[r] = Some(d);
            }
        }
    }

    /// Key width of the arrangement a join or reduce reads (through `enter_arrangement`).
    fn key_width(plan: &Plan, mut node: usize) -> Option<usize> {
        loop {
            match &plan.nodes[node].op {
                Op::EnterArrangement => node = plan.nodes[node].inputs[0],
                Op::Arrange { key } => return Some(key.len()),
                // An attached plan's import of this engine's arrangement.
                Op::ImportTrace { source } if *source < node => node = *source,
                _ => return None,
            }
        }
    }

    fn link_node(&mut self, plan: &Plan, n: usize, op: &Op) {
        let node = &plan.nodes[n];
        let width = node.columns.len();
        let label = node.label.as_str();
        let first = node.inputs.first().copied();
        let same = |links: &mut Self, input: usize| {
            let w = width.min(plan.nodes[input].columns.len());
            for c in 0..w {
                links.union((n, c), (input, c), label);
            }
        };
        match op {
            Op::Filter { .. }
            | Op::TemporalFilter { .. }
            | Op::FilterPy { .. }
            | Op::Negate
            | Op::Scale { .. }
            | Op::Consolidate
            | Op::AdvanceIteration { .. }
            | Op::Delay
            | Op::Enter
            | Op::EnterArrangement
            | Op::Leave
            | Op::InspectPy { .. }
            | Op::Capture
            | Op::Probe => {
                if let Some(i) = first {
                    same(self, i);
                }
            }
            Op::Watermark { emit, .. } => {
                use super::operators::watermark::Emit;
                let port = usize::from(matches!(emit, Emit::Closed | Emit::Expire));
                if let Some(&i) = node.inputs.get(port) {
                    same(self, i);
                }
            }
            Op::Concat => {
                for &i in &node.inputs {
                    for c in 0..width.min(plan.nodes[i].columns.len()) {
                        self.union((n, c), (i, c), label);
                    }
                }
            }
            Op::Select { exprs } => {
                let Some(i) = first else { return };
                let names = &plan.nodes[i].columns;
                for (j, e) in exprs.iter().enumerate() {
                    if let crate::expr::Expr::Col(name) = e {
                        if let Some(c) = names.iter().position(|x| x == name) {
                            self.union((n, j), (i, c), label);
                        }
                    }
                }
            }
            Op::Arrange { key } => {
                let Some(i) = first else { return };
                let rest = (0..plan.nodes[i].columns.len()).filter(|c| !key.contains(c));
                for (j, c) in key.iter().copied().chain(rest).enumerate() {
                    if j < width {
                        self.union((n, j), (i, c), label);
                    }
                }
            }
            Op::Join { kind, .. } => {
                let (a, b) = (node.inputs[0], node.inputs[1]);
                let Some(kw) = Self::key_width(plan, a) else {
                    return;
                };
                let wa = plan.nodes[a].columns.len();
                let wb = plan.nodes[b].columns.len();
                for c in 0..kw.min(wb) {
                    self.union((a, c), (b, c), label);
                }
                for c in 0..wa.min(width) {
                    self.union((n, c), (a, c), label);
                }
                if *kind == JoinKind::Join {
                    for c in kw..wb {
                        if wa + c - kw < width {
                            self.union((n, wa + c - kw), (b, c), label);
                        }
                    }
                }
            }
            Op::Reduce { .. } => {
                let Some(i) = first else { return };
                let kw = Self::key_width(plan, i).unwrap_or(0);
                for c in 0..kw.min(width) {
                    self.union((n, c), (i, c), label);
                }
            }
            Op::Variable { result } => {
                if let Some(i) = first {
                    for c in 0..width.min(plan.nodes[i].columns.len()) {
                        self.union((n, c), (i, c), label);
                    }
                }
                for c in 0..width.min(plan.nodes[*result].columns.len()) {
                    self.union((n, c), (*result, c), label);
                }
            }
            Op::ImportTrace { source } if *source < n => {
                for c in 0..width {
                    self.union((n, c), (*source, c), label);
                }
            }
            // Inputs, Python functions, traces of another engine: columns of their own.
            _ => {}
        }
    }

    /// Checks the first batch's dtypes of input `node` against the columns they are linked
    /// with, then fixes them; `describe(node, col)` names a column of an input for the
    /// error. Nothing is fixed when the check fails.
    pub(super) fn fix_input(
        &mut self,
        node: usize,
        dtypes: &[DType],
        describe: &dyn Fn(usize, usize) -> String,
    ) -> Result<()> {
        for (c, &d) in dtypes.iter().enumerate() {
            let root = self.find(self.slot(node, c));
            if let Some((fixed, other, oc)) = self.fixed[root] {
                if fixed != d && other != node {
                    let at = self.meets[root]
                        .as_deref()
                        .map(|m| format!(" at {m}"))
                        .unwrap_or_default();
                    return Err(Error::Type(format!(
                        "{} has dtype {}, but the plan puts it beside {}{at}, which earlier \
                         updates fixed to {}; the batch was refused, and nothing already \
                         accepted is lost",
                        describe(node, c),
                        d.name(),
                        describe(other, oc),
                        fixed.name()
                    )));
                }
            }
        }
        for (c, &d) in dtypes.iter().enumerate() {
            let root = self.find(self.slot(node, c));
            if self.fixed[root].is_none() {
                self.fixed[root] = Some((d, node, c));
            }
        }
        Ok(())
    }
}
