//! Attaching another dataflow's plan to a running engine (`import_trace`, see "Trace
//! handles and attached dataflows" in `ENGINE.md`).

use super::input::InputState;
use super::plan::{self, Op, Plan};
use super::{consumers_of, progress, Engine};
use crate::error::{Error, Result};

impl Engine {
    /// Attaches another dataflow's plan to this running engine: its nodes get ids from the
    /// returned offset on, its iterate scopes follow this plan's, and its `import_trace`
    /// nodes read the named top-level arrangements of this engine (their consumers first see
    /// the trace's current contents, then each new batch). Both run in every pass.
    pub fn attach(&mut self, other: Plan) -> Result<usize> {
        if other.time_dims != self.plan.time_dims {
            return Err(Error::Plan(format!(
                "the attached dataflow has {} time coordinates, the running one {}",
                other.time_dims, self.plan.time_dims
            )));
        }
        let offset = self.plan.nodes.len();
        let scope_base = self.plan.scopes.len() - 1;
        let map_scope = |s: usize| if s == 0 { 0 } else { s + scope_base };
        let mut nodes = Vec::with_capacity(other.nodes.len());
        for mut n in other.nodes {
            n.id += offset;
            n.scope = map_scope(n.scope);
            for i in n.inputs.iter_mut() {
                *i += offset;
            }
            match &mut n.op {
                Op::Variable { result } => *result += offset,
                Op::ImportTrace { source } => {
                    let ok = self.plan.nodes.get(*source).is_some_and(|s| {
                        s.scope == 0 && matches!(s.op, Op::Arrange { .. } | Op::ImportTrace { .. })
                    });
                    if !ok {
                        return Err(Error::Plan(format!(
                            "{}: source node {source} is not a top-level arrangement of the \
                             running dataflow",
                            n.label
                        )));
                    }
                    let width = self.trace_of[*source]
                        .map(|t| self.plan.nodes[t].columns.len())
                        .unwrap_or(0);
                    if width != n.columns.len() {
                        return Err(Error::Plan(format!(
                            "{}: {} columns, the imported arrangement has {width}",
                            n.label,
                            n.columns.len()
                        )));
                    }
                    n.inputs = vec![*source];
                }
                _ => {}
            }
            nodes.push(n);
        }
        for sc in other.scopes.into_iter().skip(1) {
            self.plan.scopes.push(plan::Scope {
                parent: sc.parent.map(map_scope),
                depth: sc.depth,
                max_iterations: sc.max_iterations,
            });
        }
        self.plan.nodes.extend(nodes);
        let n = self.plan.nodes.len();
        self.ports = progress::input_ports(&self.plan);
        self.consumers = consumers_of(&self.ports);
        self.graph = super::progress_graph::ProgressGraph::new(&self.plan, &self.ports);
        for node in offset..n {
            let spec = &self.plan.nodes[node];
            let t = spec.trace_source(&self.trace_of);
            self.trace_of.push(t);
            self.inputs.push(InputState::of(&spec.op));
        }
        for w in self.workers.iter_mut() {
            w.extend(&self.plan);
        }
        self.relink_dtypes();
        self.feed_constants(offset)?;
        self.compute_frontiers();
        self.compute_frontiers_in();
        Ok(offset)
    }
}
