//! Binding: resolves column names to schema indexes, infers and checks dtypes, inserts the
//! implicit int64 -> float64 promotions, interns string literals, and produces the typed
//! tree ([`BoundExpr`]) that [`eval`](super::eval) runs.

use super::ast::{BinaryOp, Expr, Scalar};
use crate::encoding::{DType, Interner};
use crate::error::{Error, Result};

/// A constant of a bound tree (strings already interned).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Const {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(u64),
}

/// A node of a bound tree. Operand dtypes are final: binary operands share one dtype.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub kind: Kind,
    pub dtype: DType,
}

/// The node kinds. `src` is the source expression's text, kept for error messages by the
/// nodes that can fail at run time.
#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// Input column (schema index).
    Input(usize),
    Const(Const),
    /// A null of the node's dtype on every row.
    Null,
    /// `+ - * // %` on two int64 or two float64 operands; `/` on two float64.
    Arith {
        op: BinaryOp,
        lhs: Box<Node>,
        rhs: Box<Node>,
        src: String,
    },
    /// `== != < <= > >=` on two operands of the same dtype.
    Cmp {
        op: BinaryOp,
        lhs: Box<Node>,
        rhs: Box<Node>,
    },
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
    Neg {
        arg: Box<Node>,
        src: String,
    },
    /// Cast of `arg` to the node's dtype (never a no-op).
    Cast {
        arg: Box<Node>,
        src: String,
    },
    When {
        cond: Box<Node>,
        then: Box<Node>,
        otherwise: Box<Node>,
    },
    MinMax {
        max: bool,
        lhs: Box<Node>,
        rhs: Box<Node>,
    },
    /// `is_null` (`negate`: `is_not_null`) of `arg`.
    IsNull {
        arg: Box<Node>,
        negate: bool,
    },
    /// The first non-null operand per row (operands share the node's dtype).
    Coalesce(Vec<Node>),
    /// The operand's words under another dtype label (same physical dtype).
    Retype(Box<Node>),
    /// A library function ([`super::func_bind`]).
    Func {
        func: Box<super::func_bind::BoundFunc>,
        args: Vec<Node>,
        src: String,
    },
}

/// An expression bound to a schema: column indexes resolved and dtypes checked.
#[derive(Clone, Debug)]
pub struct BoundExpr {
    pub(crate) root: Node,
    expr: Expr,
    schema: Vec<(String, DType)>,
    inputs: Vec<usize>,
}

impl BoundExpr {
    /// The output dtype.
    pub fn dtype(&self) -> DType {
        self.root.dtype
    }

    /// The source expression.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// The output column name ([`Expr::output_name`]).
    pub fn output_name(&self) -> String {
        self.expr.output_name()
    }

    /// The schema the expression was bound to.
    pub fn schema(&self) -> &[(String, DType)] {
        &self.schema
    }

    /// The schema indexes of the referenced columns, ascending.
    pub fn inputs(&self) -> &[usize] {
        &self.inputs
    }
}

pub(super) fn is_num(d: DType) -> bool {
    matches!(d, DType::Int64 | DType::Float64)
}

/// Promotes an int64 node to float64 (folding int literals).
pub(super) fn to_float(n: Node) -> Node {
    match (n.dtype, &n.kind) {
        (DType::Int64, Kind::Const(Const::Int(v))) => Node {
            kind: Kind::Const(Const::Float(*v as f64)),
            dtype: DType::Float64,
        },
        (DType::Int64, _) => Node {
            kind: Kind::Cast {
                arg: Box::new(n),
                src: String::new(),
            },
            dtype: DType::Float64,
        },
        _ => n,
    }
}

/// Brings two numeric operands to a common dtype (float64 if either is).
pub(super) fn unify_num(a: Node, b: Node) -> (Node, Node, DType) {
    if a.dtype == b.dtype {
        let d = a.dtype;
        (a, b, d)
    } else {
        (to_float(a), to_float(b), DType::Float64)
    }
}

struct Binder<'a> {
    schema: &'a [(String, DType)],
    top: &'a Expr,
    used: Vec<bool>,
}

impl Binder<'_> {
    fn type_err(&self, e: &Expr, msg: String) -> Error {
        if std::ptr::eq(e, self.top) {
            Error::Type(format!("{msg} in {e}"))
        } else {
            Error::Type(format!("{msg} in {e} (in {})", self.top))
        }
    }

    fn bind(&mut self, e: &Expr) -> Result<Node> {
        if let Some((op, a, b)) = e.as_binary() {
            let (l, r) = (self.bind(a)?, self.bind(b)?);
            return self.binary(e, op, l, r);
        }
        Ok(match e {
            Expr::Col(name) => {
                let Some(i) = self.schema.iter().position(|(n, _)| n == name) else {
                    let available: Vec<&str> =
                        self.schema.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(Error::ColumnNotFound(format!(
                        "column {name:?} not found in expression {}; available columns: {available:?}",
                        self.top
                    )));
                };
                self.used[i] = true;
                Node {
                    kind: Kind::Input(i),
                    dtype: self.schema[i].1,
                }
            }
            Expr::Lit(s) => {
                let c = match s {
                    Scalar::Int64(v) => Const::Int(*v),
                    Scalar::Float64(v) => Const::Float(*v),
                    Scalar::Bool(v) => Const::Bool(*v),
                    Scalar::Str(v) => Const::Str(Interner::intern_permanent(v)),
                    Scalar::Binary(v) => {
                        Const::Str(Interner::intern_permanent(&crate::encoding::binary_text(v)))
                    }
                    Scalar::Word(v, _) => Const::Int(*v),
                };
                Node {
                    kind: Kind::Const(c),
                    dtype: s.dtype(),
                }
            }
            Expr::Null(Some(d)) => Node {
                kind: Kind::Null,
                dtype: *d,
            },
            Expr::Null(None) => {
                return Err(Error::Type(format!(
                    "{e} has no dtype: give one, lit(None, \"int64\") (only a whole select \
                     column that the plan links with another column may leave it out), in \
                     expression {}",
                    self.top
                )))
            }
            Expr::Alias(a, _) => self.bind(a)?,
            Expr::Not(_) | Expr::Neg(_) | Expr::Cast(..) | Expr::When { .. } => {
                self.bind_unary(e)?
            }
            Expr::Func(func, args) => self.bind_func(e, func, args)?,
            Expr::IsNull(a) | Expr::IsNotNull(a) => Node {
                kind: Kind::IsNull {
                    arg: Box::new(self.bind(a)?),
                    negate: matches!(e, Expr::IsNotNull(_)),
                },
                dtype: DType::Bool,
            },
            Expr::Coalesce(args) => self.bind_coalesce(e, args)?,
            _ => unreachable!("binary handled above"),
        })
    }

    /// `~`, unary `-`, casts and `when` (out of line: keeps the recursive [`Binder::bind`]
    /// frame small, since a debug build gives every arm's locals their own slots).
    #[inline(never)]
    fn bind_unary(&mut self, e: &Expr) -> Result<Node> {
        Ok(match e {
            Expr::Not(a) => {
                let a = self.bind(a)?;
                if a.dtype != DType::Bool {
                    return Err(
                        self.type_err(e, format!("~ needs a bool operand, got {}", a.dtype.name()))
                    );
                }
                Node {
                    kind: Kind::Not(Box::new(a)),
                    dtype: DType::Bool,
                }
            }
            Expr::Neg(a) => {
                let a = super::bind_logical::widen(self.bind(a)?);
                let counted = matches!(
                    a.dtype.family(),
                    crate::dtype::Family::Decimal | crate::dtype::Family::Duration
                );
                if !is_num(a.dtype) && !counted {
                    return Err(self.type_err(
                        e,
                        format!(
                            "unary - needs an int64 or float64 operand, got {}",
                            a.dtype.name()
                        ),
                    ));
                }
                let dtype = a.dtype;
                Node {
                    kind: Kind::Neg {
                        arg: Box::new(a),
                        src: e.to_string(),
                    },
                    dtype,
                }
            }
            Expr::Cast(a, to, strict) => {
                let a = self.bind(a)?;
                super::bind_cast::bind_cast(a, *to, *strict, &e.to_string())
                    .map_err(|msg| self.type_err(e, msg))?
            }
            Expr::When {
                cond,
                then,
                otherwise,
            } => {
                let c = self.bind(cond)?;
                if c.dtype != DType::Bool {
                    return Err(self.type_err(
                        e,
                        format!("when() condition must be bool, got {}", c.dtype.name()),
                    ));
                }
                let (t, o) = (self.bind(then)?, self.bind(otherwise)?);
                let (t, o) = if t.dtype == o.dtype {
                    (t, o)
                } else {
                    (super::bind_logical::widen(t), super::bind_logical::widen(o))
                };
                let (t, o, dtype) = if t.dtype == o.dtype {
                    let d = t.dtype;
                    (t, o, d)
                } else if is_num(t.dtype) && is_num(o.dtype) {
                    unify_num(t, o)
                } else if super::bind_logical::is_logical(t.dtype)
                    || super::bind_logical::is_logical(o.dtype)
                {
                    // A decimal with an integer (SQL's CASE ... THEN price ELSE 0), two
                    // decimal scales, a date with a timestamp: aligned as comparisons are.
                    super::bind_logical::align(t, o, &e.to_string())
                        .map_err(|msg| self.type_err(e, format!("then() and otherwise(): {msg}")))?
                } else {
                    return Err(self.type_err(
                        e,
                        format!(
                            "then() and otherwise() have incompatible dtypes {} and {}",
                            t.dtype.name(),
                            o.dtype.name()
                        ),
                    ));
                };
                Node {
                    kind: Kind::When {
                        cond: Box::new(c),
                        then: Box::new(t),
                        otherwise: Box::new(o),
                    },
                    dtype,
                }
            }
            _ => unreachable!("bind dispatches only these here"),
        })
    }

    /// `coalesce`: operands of one dtype (int64 and float64 mixed promote to float64).
    #[inline(never)]
    fn bind_coalesce(&mut self, e: &Expr, args: &[Expr]) -> Result<Node> {
        let mut nodes = args
            .iter()
            .map(|a| self.bind(a))
            .collect::<Result<Vec<_>>>()?;
        let mixed = nodes.iter().any(|n| n.dtype != nodes[0].dtype);
        if mixed
            && nodes
                .iter()
                .any(|n| super::bind_logical::is_logical(n.dtype))
        {
            nodes = self.align_all(e, nodes)?;
        } else if mixed {
            nodes = nodes.into_iter().map(super::bind_logical::widen).collect();
        }
        let first = nodes[0].dtype;
        let dtype = if nodes.iter().all(|n| n.dtype == first) {
            first
        } else if nodes.iter().all(|n| is_num(n.dtype)) {
            DType::Float64
        } else {
            let names: Vec<&str> = nodes.iter().map(|n| n.dtype.name()).collect();
            return Err(self.type_err(
                e,
                format!(
                    "coalesce operands have incompatible dtypes {}",
                    names.join(", ")
                ),
            ));
        };
        if dtype == DType::Float64 {
            nodes = nodes.into_iter().map(to_float).collect();
        }
        Ok(Node {
            kind: Kind::Coalesce(nodes),
            dtype,
        })
    }

    /// Operands of logical dtypes brought to one stored form, as `when` aligns its two
    /// branches (decimal scales, a decimal with integers or floats, dates with timestamps):
    /// the form every pair aligns to, folded over the operands, then each operand brought
    /// to it.
    fn align_all(&self, e: &Expr, nodes: Vec<Node>) -> Result<Vec<Node>> {
        use super::bind_logical::{align, is_logical, widen};
        let src = e.to_string();
        let err = |msg: String| self.type_err(e, format!("coalesce operands: {msg}"));
        // `n` in the form of `target` (a node of the common dtype).
        let to_form = |n: Node, target: &Node| -> Result<Node> {
            if n.dtype == target.dtype {
                Ok(n)
            } else if !is_logical(n.dtype) && target.dtype == DType::Float64 && is_num(n.dtype) {
                Ok(to_float(widen(n)))
            } else if !is_logical(n.dtype) && !is_logical(target.dtype) {
                Ok(widen(n))
            } else {
                align(n, target.clone(), &src)
                    .map(|(n, _, _)| n)
                    .map_err(err)
            }
        };
        let mut target = nodes[0].clone();
        for n in &nodes[1..] {
            target = if target.dtype == n.dtype {
                target
            } else if is_logical(target.dtype) || is_logical(n.dtype) {
                align(target, n.clone(), &src).map_err(err)?.0
            } else if widen(n.clone()).dtype == DType::Float64 {
                to_float(widen(target))
            } else {
                widen(target)
            };
        }
        nodes.into_iter().map(|n| to_form(n, &target)).collect()
    }

    /// A library function (out of line: keeps the recursive [`Binder::bind`] frame small).
    #[inline(never)]
    fn bind_func(&mut self, e: &Expr, func: &super::func::Func, args: &[Expr]) -> Result<Node> {
        let args = args
            .iter()
            .map(|a| self.bind(a))
            .collect::<Result<Vec<_>>>()?;
        super::func_bind::bind(func, args, e.to_string()).map_err(|err| match err {
            Error::Type(msg) => self.type_err(e, msg),
            other => other,
        })
    }

    /// The logical dtypes' rules (out of line: keeps the recursive frame small).
    #[inline(never)]
    fn binary_logical(
        &self,
        e: &Expr,
        op: BinaryOp,
        l: Node,
        r: Node,
    ) -> Result<super::bind_logical::Bound> {
        if !super::bind_logical::is_logical(l.dtype)
            && !super::bind_logical::is_logical(r.dtype)
            && l.dtype.is_physical()
            && r.dtype.is_physical()
        {
            return Ok(super::bind_logical::Bound::Physical(l, r));
        }
        super::bind_logical::binary(op, l, r, &e.to_string()).map_err(|msg| self.type_err(e, msg))
    }

    /// A binary operator (out of line: keeps the recursive [`Binder::bind`] frame small).
    #[inline(never)]
    fn binary(&mut self, e: &Expr, op: BinaryOp, l: Node, r: Node) -> Result<Node> {
        let (l, r) = match self.binary_logical(e, op, l, r)? {
            super::bind_logical::Bound::Node(n) => return Ok(n),
            super::bind_logical::Bound::Physical(l, r) => (l, r),
        };
        let (ld, rd) = (l.dtype.name(), r.dtype.name());
        let both_num = is_num(l.dtype) && is_num(r.dtype);
        let both = |d: DType| l.dtype == d && r.dtype == d;
        let name = op
            .symbol()
            .map(str::to_string)
            .unwrap_or_else(|| op.json_name().to_string());
        match op {
            BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::TrueDiv
            | BinaryOp::FloorDiv
            | BinaryOp::Mod => {
                if !both_num {
                    let hint = if l.dtype == DType::Bool || r.dtype == DType::Bool {
                        " (cast bool to int64 first)"
                    } else {
                        ""
                    };
                    return Err(
                        self.type_err(e, format!("cannot apply {name} to {ld} and {rd}{hint}"))
                    );
                }
                let (l, r, dtype) = if op == BinaryOp::TrueDiv {
                    (to_float(l), to_float(r), DType::Float64)
                } else {
                    unify_num(l, r)
                };
                Ok(Node {
                    kind: Kind::Arith {
                        op,
                        lhs: Box::new(l),
                        rhs: Box::new(r),
                        src: e.to_string(),
                    },
                    dtype,
                })
            }
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => {
                let (l, r) = if both_num {
                    let (l, r, _) = unify_num(l, r);
                    (l, r)
                } else if both(DType::Bool) {
                    (l, r)
                } else if both(DType::Str) || both(DType::Binary) {
                    // Equality by id; order by text (`eval::compare_text`).
                    (l, r)
                } else {
                    return Err(
                        self.type_err(e, format!("cannot compare {ld} with {rd} using {name}"))
                    );
                };
                Ok(Node {
                    kind: Kind::Cmp {
                        op,
                        lhs: Box::new(l),
                        rhs: Box::new(r),
                    },
                    dtype: DType::Bool,
                })
            }
            BinaryOp::And | BinaryOp::Or => {
                if !both(DType::Bool) {
                    return Err(self.type_err(
                        e,
                        format!("{name} needs two bool operands, got {ld} and {rd} (compare first, e.g. (col(\"x\") > 0))"),
                    ));
                }
                let (l, r) = (Box::new(l), Box::new(r));
                Ok(Node {
                    kind: if op == BinaryOp::And {
                        Kind::And(l, r)
                    } else {
                        Kind::Or(l, r)
                    },
                    dtype: DType::Bool,
                })
            }
            BinaryOp::MinOf | BinaryOp::MaxOf => {
                let (l, r, dtype) = if both_num {
                    unify_num(l, r)
                } else if both(DType::Bool) {
                    (l, r, DType::Bool)
                } else {
                    return Err(self.type_err(
                        e,
                        format!("{name} needs two numeric or two bool operands, got {ld} and {rd}"),
                    ));
                };
                Ok(Node {
                    kind: Kind::MinMax {
                        max: op == BinaryOp::MaxOf,
                        lhs: Box::new(l),
                        rhs: Box::new(r),
                    },
                    dtype,
                })
            }
        }
    }
}

impl Expr {
    /// Binds the expression to a schema (column names and dtypes, in row order): resolves
    /// columns ([`Error::ColumnNotFound`] names the column, the expression and the available
    /// columns; the first of duplicate names wins) and checks dtypes ([`Error::Type`] names
    /// the sub-expression and the dtypes).
    pub fn bind(&self, schema: &[(String, DType)]) -> Result<BoundExpr> {
        if self.depth() > super::json::MAX_DEPTH {
            return Err(Error::Plan(format!(
                "expression nested deeper than {} levels",
                super::json::MAX_DEPTH
            )));
        }
        let mut b = Binder {
            schema,
            top: self,
            used: vec![false; schema.len()],
        };
        let root = b.bind(self)?;
        let inputs = b
            .used
            .iter()
            .enumerate()
            .filter_map(|(i, &u)| u.then_some(i))
            .collect();
        Ok(BoundExpr {
            root,
            expr: self.clone(),
            schema: schema.to_vec(),
            inputs,
        })
    }
}
