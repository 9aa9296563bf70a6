//! The dataflow plan: parsed from the JSON that the Python package builds (see `PLAN.md`).

use super::operators::{
    advance, arrange, capture, consolidate, delay, filter, inert, inspect, join, leave, negate,
    passthrough, python, reduce, select, variable, Operator,
};
use crate::error::{Error, Result};
use crate::expr::Expr;
use serde_json::Value;

/// A scope: the top level (id 0) or an `iterate` body.
#[derive(Clone, Debug)]
pub struct Scope {
    /// Parent scope (None for the top level).
    pub parent: Option<usize>,
    /// Nesting depth (0 for the top level).
    pub depth: usize,
    /// Iterations are `0..max_iterations` when set.
    pub max_iterations: Option<u64>,
}

/// An aggregate of `reduce`.
#[derive(Clone, Debug)]
pub enum Agg {
    /// Least value of a val column among values with positive count.
    Min(usize),
    /// Greatest value of a val column among values with positive count.
    Max(usize),
    /// Signed weighted sum of a val column.
    Sum(usize),
    /// Signed sum of counts.
    Count,
    /// Each distinct val with positive count, once.
    Distinct,
    /// The `k` least (or greatest) val rows by a column, among values with positive count.
    TopK {
        k: usize,
        column: usize,
        descending: bool,
    },
    /// Output count `fn(count)` per row, computed by a vectorised Python callback.
    ThresholdPy(u64),
    /// A Python reducer called once per batch of keys.
    Python { func: u64, columns: usize },
}

/// The operator of a node, with its own arguments.
#[derive(Clone, Debug)]
pub enum Op {
    Input {
        name: String,
    },
    Select {
        exprs: Vec<Expr>,
    },
    Filter {
        predicate: Expr,
    },
    MapPy {
        func: u64,
    },
    FlatMapPy {
        func: u64,
    },
    FilterPy {
        func: u64,
    },
    Concat,
    Negate,
    Consolidate,
    /// Moves the iteration coordinate to `max(current, expr(row))` (int64, inside `iterate`).
    AdvanceIteration {
        expr: Expr,
    },
    /// Holds updates by time until their time is complete.
    Delay,
    Arrange {
        key: Vec<usize>,
    },
    Join {
        kind: JoinKind,
    },
    Reduce {
        agg: Agg,
    },
    Enter,
    EnterArrangement,
    /// Another dataflow's top-level arrangement `source` (a node id of the engine this plan
    /// is attached to), read without a copy.
    ImportTrace {
        source: usize,
    },
    Variable {
        result: usize,
    },
    Leave,
    InspectPy {
        func: u64,
        batch: bool,
    },
    Capture,
    Probe,
}

/// The flavour of a join.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    Join,
    Semijoin,
    Antijoin,
}

/// One node of the plan.
#[derive(Clone, Debug)]
pub struct Node {
    pub id: usize,
    pub op: Op,
    pub scope: usize,
    pub inputs: Vec<usize>,
    pub columns: Vec<String>,
    pub label: String,
}

impl Node {
    /// The operator's short name (as in the plan JSON).
    pub fn op_name(&self) -> &'static str {
        match &self.op {
            Op::Input { .. } => "input",
            Op::Select { .. } => "select",
            Op::Filter { .. } => "filter",
            Op::MapPy { .. } => "map_py",
            Op::FlatMapPy { .. } => "flat_map_py",
            Op::FilterPy { .. } => "filter_py",
            Op::Concat => "concat",
            Op::Negate => "negate",
            Op::Consolidate => "consolidate",
            Op::AdvanceIteration { .. } => "advance_iteration",
            Op::Delay => "delay",
            Op::Arrange { .. } => "arrange",
            Op::Join { .. } => "join",
            Op::Reduce { .. } => "reduce",
            Op::Enter => "enter",
            Op::EnterArrangement => "enter_arrangement",
            Op::ImportTrace { .. } => "import_trace",
            Op::Variable { .. } => "variable",
            Op::Leave => "leave",
            Op::InspectPy { .. } => "inspect_py",
            Op::Capture => "capture",
            Op::Probe => "probe",
        }
    }

    /// The upstream nodes feeding each of the node's input ports (`variable`: the source,
    /// then its result; `join`: left, right; `concat`: one port per input).
    pub fn ports(&self) -> Vec<Vec<usize>> {
        match &self.op {
            Op::Variable { result } => vec![vec![self.inputs[0]], vec![*result]],
            Op::Concat => self.inputs.iter().map(|&i| vec![i]).collect(),
            Op::Join { .. } => vec![vec![self.inputs[0]], vec![self.inputs[1]]],
            Op::Input { .. } => vec![vec![]],
            _ => vec![self.inputs.clone()],
        }
    }

    /// A fresh instance of the node's operator (one per worker).
    pub fn operator(&self, plan: &Plan) -> Box<dyn Operator> {
        let coord = || {
            plan.iter_coord(self.scope)
                .expect("an operator inside a scope")
        };
        let max_iterations = plan.scopes[self.scope].max_iterations;
        match &self.op {
            Op::Input { .. } | Op::Probe | Op::EnterArrangement | Op::ImportTrace { .. } => {
                Box::new(inert::Inert)
            }
            Op::Concat | Op::Enter => Box::new(passthrough::PassThrough),
            Op::Negate => Box::new(negate::Negate),
            Op::Leave => Box::new(leave::Leave::new(
                plan.iter_coord(plan.nodes[self.inputs[0]].scope)
                    .expect("leave from a scope"),
            )),
            Op::Variable { .. } => Box::new(variable::Variable::new(coord(), max_iterations)),
            Op::Select { exprs } => Box::new(select::Select::new(exprs)),
            Op::Filter { predicate } => Box::new(filter::Filter::new(predicate)),
            Op::AdvanceIteration { expr } => Box::new(advance::AdvanceIteration::new(
                expr,
                coord(),
                max_iterations,
            )),
            Op::MapPy { func } => Box::new(python::PyStage::new(python::PyKind::Map, *func)),
            Op::FlatMapPy { func } => {
                Box::new(python::PyStage::new(python::PyKind::FlatMap, *func))
            }
            Op::FilterPy { func } => Box::new(python::PyStage::new(python::PyKind::Filter, *func)),
            Op::InspectPy { func, .. } => Box::new(inspect::Inspect::new(
                *func,
                plan.time_dims + plan.scopes[self.scope].depth,
            )),
            Op::Delay => Box::new(delay::DelayState::new()),
            Op::Consolidate => Box::new(consolidate::Consolidate::default()),
            Op::Arrange { key } => Box::new(arrange::Arrange::new(key, self.columns.len())),
            Op::Join { kind } => Box::new(join::Join::new(*kind)),
            Op::Reduce { agg } => Box::new(reduce::Reduce::new(
                agg,
                plan.arrange_key(self.inputs[0]).map_or(0, |k| k.len()),
            )),
            Op::Capture => Box::new(capture::Capture::default()),
        }
    }

    /// Whether the node's output is an arrangement.
    pub fn is_arrangement(&self) -> bool {
        matches!(
            self.op,
            Op::Arrange { .. } | Op::EnterArrangement | Op::ImportTrace { .. }
        )
    }
}

/// A parsed, validated plan.
#[derive(Clone, Debug)]
pub struct Plan {
    pub time_dims: usize,
    pub scopes: Vec<Scope>,
    pub nodes: Vec<Node>,
}

fn field<'a>(v: &'a Value, name: &str, ctx: &str) -> Result<&'a Value> {
    v.get(name)
        .ok_or_else(|| Error::Plan(format!("{ctx}: missing field {name:?}")))
}

fn as_u64(v: &Value, name: &str, ctx: &str) -> Result<u64> {
    field(v, name, ctx)?.as_u64().ok_or_else(|| {
        Error::Plan(format!(
            "{ctx}: field {name:?} must be a non-negative integer"
        ))
    })
}

fn as_usize_list(v: &Value, name: &str, ctx: &str) -> Result<Vec<usize>> {
    let arr = field(v, name, ctx)?
        .as_array()
        .ok_or_else(|| Error::Plan(format!("{ctx}: field {name:?} must be a list")))?;
    arr.iter()
        .map(|x| {
            x.as_u64()
                .map(|u| u as usize)
                .ok_or_else(|| Error::Plan(format!("{ctx}: {name:?} must hold integers")))
        })
        .collect()
}

fn parse_agg(v: &Value, ctx: &str) -> Result<Agg> {
    let kind = field(v, "kind", ctx)?.as_str().unwrap_or("");
    let col = || as_u64(v, "column", ctx).map(|c| c as usize);
    Ok(match kind {
        "min" => Agg::Min(col()?),
        "max" => Agg::Max(col()?),
        "sum" => Agg::Sum(col()?),
        "count" => Agg::Count,
        "distinct" => Agg::Distinct,
        "top_k" => Agg::TopK {
            k: as_u64(v, "k", ctx)? as usize,
            column: col()?,
            descending: v
                .get("descending")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        },
        "threshold_py" => Agg::ThresholdPy(as_u64(v, "fn", ctx)?),
        "python" => Agg::Python {
            func: as_u64(v, "fn", ctx)?,
            columns: as_u64(v, "columns", ctx)? as usize,
        },
        other => {
            return Err(Error::Plan(format!(
                "{ctx}: unknown aggregate kind {other:?}"
            )))
        }
    })
}

impl Plan {
    /// Parses and validates a plan from its JSON text.
    pub fn from_json(text: &str) -> Result<Plan> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::Plan(format!("invalid plan JSON: {e}")))?;
        let time_dims = as_u64(&v, "time_dims", "plan")? as usize;
        let mut scopes = Vec::new();
        for (i, s) in field(&v, "scopes", "plan")?
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let parent = s.get("parent").and_then(Value::as_u64).map(|p| p as usize);
            if i > 0 && parent.is_none_or(|p| p >= i) {
                return Err(Error::Plan(format!(
                    "scope {i}: parent must be an earlier scope"
                )));
            }
            let depth = parent
                .map(|p: usize| scopes.get(p).map(|s: &Scope| s.depth + 1).unwrap_or(1))
                .unwrap_or(0);
            let max_iterations = match s.get("max_iterations") {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_u64() {
                    Some(m) if m >= 1 => Some(m),
                    _ => {
                        return Err(Error::Plan(format!(
                            "scope {i}: max_iterations must be null or an integer from 1 to \
                             2**64-1, got {v}"
                        )))
                    }
                },
            };
            scopes.push(Scope {
                parent,
                depth,
                max_iterations,
            });
        }
        if scopes.is_empty() {
            scopes.push(Scope {
                parent: None,
                depth: 0,
                max_iterations: None,
            });
        }
        let max_depth = scopes.iter().map(|s| s.depth).max().unwrap_or(0);
        if time_dims == 0 || time_dims + max_depth > crate::lattice::MAX_DIMS {
            return Err(Error::Plan(format!(
                "time_dims {time_dims} plus iterate nesting depth {max_depth} must be between 1 and {}",
                crate::lattice::MAX_DIMS
            )));
        }
        let mut nodes = Vec::new();
        for (i, n) in field(&v, "nodes", "plan")?
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let label = n
                .get("label")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let opname = field(n, "op", "node")?.as_str().unwrap_or("").to_string();
            let ctx = if label.is_empty() {
                format!("node {i} ({opname})")
            } else {
                label.clone()
            };
            let id = as_u64(n, "id", &ctx)? as usize;
            if id != i {
                return Err(Error::Plan(format!(
                    "{ctx}: id {id} does not match its position {i}"
                )));
            }
            let scope = as_u64(n, "scope", &ctx)? as usize;
            if scope >= scopes.len() {
                return Err(Error::Plan(format!("{ctx}: unknown scope {scope}")));
            }
            let inputs = as_usize_list(n, "inputs", &ctx)?;
            if let Some(bad) = inputs.iter().find(|&&x| x >= i) {
                return Err(Error::Plan(format!(
                    "{ctx}: input {bad} is not an earlier node"
                )));
            }
            let columns: Vec<String> = field(n, "columns", &ctx)?
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c.as_str().unwrap_or("").to_string())
                .collect();
            let expr = |name: &str| -> Result<Expr> { Expr::from_json(field(n, name, &ctx)?) };
            let op = match opname.as_str() {
                "input" => Op::Input {
                    name: field(n, "name", &ctx)?.as_str().unwrap_or("").to_string(),
                },
                "select" => Op::Select {
                    exprs: field(n, "exprs", &ctx)?
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(Expr::from_json)
                        .collect::<Result<_>>()?,
                },
                "filter" => Op::Filter {
                    predicate: expr("predicate")?,
                },
                "map_py" => Op::MapPy {
                    func: as_u64(n, "fn", &ctx)?,
                },
                "flat_map_py" => Op::FlatMapPy {
                    func: as_u64(n, "fn", &ctx)?,
                },
                "filter_py" => Op::FilterPy {
                    func: as_u64(n, "fn", &ctx)?,
                },
                "concat" => Op::Concat,
                "negate" => Op::Negate,
                "consolidate" => Op::Consolidate,
                "advance_iteration" => Op::AdvanceIteration {
                    expr: expr("expr")?,
                },
                "delay" => Op::Delay,
                "arrange" => Op::Arrange {
                    key: as_usize_list(n, "key", &ctx)?,
                },
                "join" => Op::Join {
                    kind: match n.get("kind").and_then(Value::as_str).unwrap_or("join") {
                        "join" => JoinKind::Join,
                        "semijoin" => JoinKind::Semijoin,
                        "antijoin" => JoinKind::Antijoin,
                        other => {
                            return Err(Error::Plan(format!("{ctx}: unknown join kind {other:?}")))
                        }
                    },
                },
                "reduce" => Op::Reduce {
                    agg: parse_agg(field(n, "agg", &ctx)?, &ctx)?,
                },
                "enter" => Op::Enter,
                "enter_arrangement" => Op::EnterArrangement,
                "import_trace" => Op::ImportTrace {
                    source: as_u64(n, "source", &ctx)? as usize,
                },
                "variable" => Op::Variable {
                    result: as_u64(n, "result", &ctx)? as usize,
                },
                "leave" => Op::Leave,
                "inspect_py" => Op::InspectPy {
                    func: as_u64(n, "fn", &ctx)?,
                    batch: n.get("batch").and_then(Value::as_bool).unwrap_or(true),
                },
                "capture" => Op::Capture,
                "probe" => Op::Probe,
                other => return Err(Error::Plan(format!("{ctx}: unknown operator {other:?}"))),
            };
            let label = if label.is_empty() {
                format!("{opname}#{i}")
            } else {
                label
            };
            nodes.push(Node {
                id,
                op,
                scope,
                inputs,
                columns,
                label,
            });
        }
        let plan = Plan {
            time_dims,
            scopes,
            nodes,
        };
        plan.validate()?;
        Ok(plan)
    }

    fn validate(&self) -> Result<()> {
        for n in &self.nodes {
            let want = match &n.op {
                Op::Input { .. } | Op::ImportTrace { .. } => Some(0),
                Op::Join { .. } => Some(2),
                Op::Concat => None,
                _ => Some(1),
            };
            if let Some(w) = want {
                if n.inputs.len() != w {
                    return Err(Error::Plan(format!(
                        "{}: expects {w} inputs, got {}",
                        n.label,
                        n.inputs.len()
                    )));
                }
            }
            for &i in &n.inputs {
                let inp = &self.nodes[i];
                let needs_arr = matches!(
                    n.op,
                    Op::Join { .. } | Op::Reduce { .. } | Op::EnterArrangement
                );
                if needs_arr != inp.is_arrangement() {
                    return Err(Error::Plan(format!(
                        "{}: input {} ({}) {} an arrangement",
                        n.label,
                        inp.label,
                        inp.op_name(),
                        if needs_arr { "must be" } else { "must not be" }
                    )));
                }
                let expected_scope = match n.op {
                    Op::Enter | Op::EnterArrangement => self.scopes[n.scope].parent,
                    _ => Some(n.scope),
                };
                let expected_scope = if let Op::Leave = n.op {
                    Some(self.scopes[inp.scope].parent == Some(n.scope)).map(|ok| {
                        if ok {
                            inp.scope
                        } else {
                            usize::MAX
                        }
                    })
                } else {
                    expected_scope
                };
                if expected_scope != Some(inp.scope) {
                    return Err(Error::Plan(format!(
                        "{}: input {} is in scope {}, which this operator cannot read",
                        n.label, inp.label, inp.scope
                    )));
                }
            }
            if matches!(n.op, Op::AdvanceIteration { .. }) && n.scope == 0 {
                return Err(Error::Plan(format!(
                    "{}: advance_iteration moves the iteration coordinate, so it must be inside \
                     an iterate scope",
                    n.label
                )));
            }
            if let Op::Variable { result } = n.op {
                if result >= self.nodes.len()
                    || self.nodes[result].scope != n.scope
                    || result <= n.id
                {
                    return Err(Error::Plan(format!(
                        "{}: result {result} must be a later node in the same scope",
                        n.label
                    )));
                }
                if n.scope == 0 {
                    return Err(Error::Plan(format!(
                        "{}: a variable must be inside an iterate scope",
                        n.label
                    )));
                }
            }
        }
        Ok(())
    }

    /// The key columns of the arrangement that node `node` (an `arrange`, or an
    /// `import_trace` of one) outputs.
    pub fn arrange_key(&self, node: usize) -> Option<&[usize]> {
        match &self.nodes[node].op {
            Op::Arrange { key } => Some(key),
            Op::ImportTrace { source } => match &self.nodes.get(*source)?.op {
                Op::Arrange { key } => Some(key),
                _ => None,
            },
            _ => None,
        }
    }

    /// The index of the iteration coordinate of a scope (None for the top level).
    pub fn iter_coord(&self, scope: usize) -> Option<usize> {
        let d = self.scopes[scope].depth;
        if d == 0 {
            None
        } else {
            Some(self.time_dims + d - 1)
        }
    }
}
