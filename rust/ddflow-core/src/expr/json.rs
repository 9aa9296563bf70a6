//! The JSON form of expressions ([`Expr::from_json`], [`Expr::to_json`]); the format is
//! documented in the [module docs](crate::expr).

use super::ast::{BinaryOp, Expr, Scalar};
use crate::encoding::DType;
use crate::error::{Error, Result};
use serde_json::{json, Map, Value};

/// Expressions nested deeper than this are rejected: binding and evaluation recurse on the
/// tree, and this depth fits a 2 MiB thread stack even in debug builds.
pub const MAX_DEPTH: usize = 256;

fn plan_err(msg: impl std::fmt::Display, v: &Value) -> Error {
    let mut text = v.to_string();
    if text.len() > 200 {
        let mut cut = 200;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    Error::Plan(format!("invalid expression JSON: {msg} in {text}"))
}

fn field<'a>(obj: &'a Map<String, Value>, key: &str, v: &Value) -> Result<&'a Value> {
    obj.get(key)
        .ok_or_else(|| plan_err(format!("missing field {key:?}"), v))
}

fn str_field<'a>(obj: &'a Map<String, Value>, key: &str, v: &Value) -> Result<&'a str> {
    field(obj, key, v)?
        .as_str()
        .ok_or_else(|| plan_err(format!("field {key:?} must be a string"), v))
}

fn dtype_field(obj: &Map<String, Value>, v: &Value) -> Result<DType> {
    DType::parse(str_field(obj, "dtype", v)?).map_err(|e| plan_err(e, v))
}

fn parse_lit(obj: &Map<String, Value>, v: &Value) -> Result<Scalar> {
    let value = field(obj, "value", v)?;
    let dtype = match obj.get("dtype") {
        None | Some(Value::Null) => None,
        Some(_) => Some(dtype_field(obj, v)?),
    };
    let bad = |what: &str| plan_err(format!("literal {value} is not {what}"), v);
    let int = |n: &serde_json::Number| -> Result<i64> {
        n.as_i64().ok_or_else(|| {
            if n.is_u64() {
                Error::Overflow(format!("integer literal {n} does not fit in int64"))
            } else {
                bad("an integer")
            }
        })
    };
    Ok(match (dtype, value) {
        (None | Some(DType::Int64), Value::Number(n)) if !n.is_f64() => Scalar::Int64(int(n)?),
        (None | Some(DType::Float64), Value::Number(n)) => {
            Scalar::Float64(n.as_f64().ok_or_else(|| bad("a float"))?)
        }
        (Some(DType::Float64), Value::String(s)) => Scalar::Float64(
            s.parse()
                .map_err(|_| bad("a float (non-finite floats are \"inf\", \"-inf\", \"nan\")"))?,
        ),
        (None | Some(DType::Bool), Value::Bool(b)) => Scalar::Bool(*b),
        (None | Some(DType::Str), Value::String(s)) => Scalar::Str(s.clone()),
        (Some(DType::Binary), Value::String(s)) => {
            Scalar::Binary(hex_bytes(s).ok_or_else(|| bad("hex digits of bytes"))?)
        }
        (Some(d), Value::Number(n)) if d.physical() == DType::Int64 && !n.is_f64() => {
            let v = int(n)?;
            if v == i64::MIN {
                return Err(bad(d.name()));
            }
            if let Some((lo, hi)) = d.int_range() {
                if !(lo..=hi).contains(&v) {
                    return Err(Error::Overflow(format!(
                        "literal {v} does not fit in {}",
                        d.name()
                    )));
                }
            }
            Scalar::Word(v, d)
        }
        (Some(DType::Float32), Value::Number(n)) => {
            let x = n.as_f64().ok_or_else(|| bad("a float"))?;
            Scalar::Float64(x as f32 as f64)
        }
        (Some(d), _) => return Err(bad(d.name())),
        (None, _) => return Err(bad("a number, bool or string")),
    })
}

/// The bytes of an even number of hex digits (`None` for anything else).
fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

fn parse(v: &Value, depth: usize) -> Result<Expr> {
    if depth > MAX_DEPTH {
        return Err(Error::Plan(format!(
            "expression nested deeper than {MAX_DEPTH} levels"
        )));
    }
    let obj = v
        .as_object()
        .ok_or_else(|| plan_err("expected an object", v))?;
    let op = str_field(obj, "op", v)?;
    let arg =
        |key: &str| -> Result<Box<Expr>> { Ok(Box::new(parse(field(obj, key, v)?, depth + 1)?)) };
    if let Some(bop) = BinaryOp::from_json_name(op) {
        let args = field(obj, "args", v)?
            .as_array()
            .filter(|a| a.len() >= 2)
            .ok_or_else(|| plan_err(format!("{op:?} needs \"args\": [a, b, ...]"), v))?;
        if depth + args.len() > MAX_DEPTH {
            return Err(Error::Plan(format!(
                "expression nested deeper than {MAX_DEPTH} levels"
            )));
        }
        // `[a, b, c]` chains to the left: `(a op b) op c`.
        let mut acc = parse(&args[0], depth + 1)?;
        for arg in &args[1..] {
            acc = Expr::binary(bop, acc, parse(arg, depth + 1)?);
        }
        return Ok(acc);
    }
    Ok(match op {
        "col" => Expr::Col(str_field(obj, "name", v)?.to_string()),
        "lit" if matches!(obj.get("value"), Some(Value::Null)) => {
            Expr::Null(match obj.get("dtype") {
                None | Some(Value::Null) => None,
                Some(_) => Some(dtype_field(obj, v)?),
            })
        }
        "lit" => Expr::Lit(parse_lit(obj, v)?),
        "neg" => Expr::Neg(arg("arg")?),
        "not" => Expr::Not(arg("arg")?),
        "cast" => Expr::Cast(
            arg("arg")?,
            dtype_field(obj, v)?,
            match obj.get("strict") {
                None | Some(Value::Null) => true,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(plan_err("field \"strict\" must be a bool", v)),
            },
        ),
        "alias" => Expr::Alias(arg("arg")?, str_field(obj, "name", v)?.to_string()),
        "when" => Expr::When {
            cond: arg("cond")?,
            then: arg("then")?,
            otherwise: arg("otherwise")?,
        },
        "is_null" => Expr::IsNull(arg("arg")?),
        "is_not_null" => Expr::IsNotNull(arg("arg")?),
        "coalesce" => {
            let args = field(obj, "args", v)?
                .as_array()
                .filter(|a| !a.is_empty())
                .ok_or_else(|| plan_err("\"coalesce\" needs \"args\": [a, ...]", v))?;
            if depth + args.len() > MAX_DEPTH {
                return Err(Error::Plan(format!(
                    "expression nested deeper than {MAX_DEPTH} levels"
                )));
            }
            Expr::Coalesce(
                args.iter()
                    .map(|a| parse(a, depth + 1))
                    .collect::<Result<Vec<_>>>()?,
            )
        }
        other if super::func::FUNC_OPS.contains(&other) => {
            return super::func::parse(other, obj, v, |x| parse(x, depth + 1));
        }
        other => return Err(plan_err(format!("unknown op {other:?}"), v)),
    })
}

/// Whether `v` written as a JSON number reads back bit-exactly with this build of
/// `serde_json` (its default float parser is exact only for up to ~15 significant digits).
fn reparses_exactly(v: f64) -> bool {
    serde_json::to_string(&v)
        .ok()
        .and_then(|t| serde_json::from_str::<f64>(&t).ok())
        .is_some_and(|back| back.to_bits() == v.to_bits())
}

fn lit_json(s: &Scalar) -> Value {
    match s {
        Scalar::Int64(v) => json!({"op": "lit", "value": v, "dtype": "int64"}),
        Scalar::Float64(v) => {
            let value = if v.is_nan() {
                json!("nan")
            } else if v.is_infinite() {
                json!(if *v > 0.0 { "inf" } else { "-inf" })
            } else if reparses_exactly(*v) {
                json!(v)
            } else {
                json!(super::ast::py_float_repr(*v))
            };
            json!({"op": "lit", "value": value, "dtype": "float64"})
        }
        Scalar::Bool(v) => json!({"op": "lit", "value": v, "dtype": "bool"}),
        Scalar::Str(v) => json!({"op": "lit", "value": v, "dtype": "str"}),
        Scalar::Binary(v) => {
            let hex: String = v.iter().map(|b| format!("{b:02x}")).collect();
            json!({"op": "lit", "value": hex, "dtype": "binary"})
        }
        Scalar::Word(v, d) => json!({"op": "lit", "value": v, "dtype": d.name()}),
    }
}

impl Expr {
    /// Parses the JSON form. Malformed JSON raises [`Error::Plan`]; an integer literal
    /// outside int64 raises [`Error::Overflow`].
    pub fn from_json(v: &Value) -> Result<Expr> {
        parse(v, 1)
    }

    /// Parses the JSON form from text.
    pub fn from_json_str(text: &str) -> Result<Expr> {
        let v: Value = from_str_deep(text, "expression JSON")?;
        Expr::from_json(&v)
    }

    /// The JSON form (literals always carry their `dtype`).
    pub fn to_json(&self) -> Value {
        if let Some((op, mut a, b)) = self.as_binary() {
            // Left-nested chains of one operator flatten into one `args` list (keeps the JSON
            // shallow for parsers with a nesting limit).
            let mut rest = vec![b];
            while let Some((op2, a2, b2)) = a.as_binary() {
                if op2 != op {
                    break;
                }
                rest.push(b2);
                a = a2;
            }
            rest.push(a);
            let args: Vec<Value> = rest.iter().rev().map(|e| e.to_json()).collect();
            return json!({"op": op.json_name(), "args": args});
        }
        match self {
            Expr::Col(name) => json!({"op": "col", "name": name}),
            Expr::Lit(s) => lit_json(s),
            Expr::Null(Some(d)) => json!({"op": "lit", "value": null, "dtype": d.name()}),
            Expr::Null(None) => json!({"op": "lit", "value": null}),
            Expr::Neg(a) => json!({"op": "neg", "arg": a.to_json()}),
            Expr::Not(a) => json!({"op": "not", "arg": a.to_json()}),
            Expr::Cast(a, d, true) => json!({"op": "cast", "dtype": d.name(), "arg": a.to_json()}),
            Expr::Cast(a, d, false) => {
                json!({"op": "cast", "dtype": d.name(), "strict": false, "arg": a.to_json()})
            }
            Expr::Alias(a, name) => json!({"op": "alias", "name": name, "arg": a.to_json()}),
            Expr::When {
                cond,
                then,
                otherwise,
            } => json!({
                "op": "when",
                "cond": cond.to_json(),
                "then": then.to_json(),
                "otherwise": otherwise.to_json(),
            }),
            Expr::Func(func, args) => func.to_json(args.iter().map(Expr::to_json).collect()),
            Expr::IsNull(a) => json!({"op": "is_null", "arg": a.to_json()}),
            Expr::IsNotNull(a) => json!({"op": "is_not_null", "arg": a.to_json()}),
            Expr::Coalesce(args) => {
                let args: Vec<Value> = args.iter().map(Expr::to_json).collect();
                json!({"op": "coalesce", "args": args})
            }
            _ => unreachable!("binary handled above"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::ast::{col, lit, max_of, when};
    use super::*;

    #[test]
    fn roundtrip() {
        let e = when(
            col("a").gt(lit(1)) | !col("b"),
            (col("x") + lit(f64::INFINITY)).cast(DType::Int64),
            max_of(-col("y"), lit(2).floor_div(lit(3)) % lit(4)),
        )
        .alias("out");
        let j = e.to_json();
        assert_eq!(Expr::from_json(&j).unwrap(), e);
        let text = j.to_string();
        assert_eq!(Expr::from_json_str(&text).unwrap(), e);
    }

    #[test]
    fn float_literals_roundtrip_through_text() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = match i % 3 {
                0 => f64::from_bits(x),
                1 => (x % 1_000_000_007) as f64 / 1000.0,
                _ => (x >> 11) as f64 * 1e-9,
            };
            let e = lit(v);
            let back = Expr::from_json_str(&e.to_json().to_string()).unwrap();
            match back {
                Expr::Lit(Scalar::Float64(b)) => {
                    assert!(
                        b.to_bits() == v.to_bits() || (b.is_nan() && v.is_nan()),
                        "{v:e}"
                    )
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(lit(0.5).to_json()["value"], json!(0.5));
        assert_eq!(
            lit(380166.44986778003).to_json()["value"],
            json!("380166.44986778003")
        );
    }

    #[test]
    fn literals() {
        let p = |s: &str| Expr::from_json_str(s);
        assert_eq!(p(r#"{"op":"lit","value":1}"#).unwrap(), lit(1));
        assert_eq!(p(r#"{"op":"lit","value":1.5}"#).unwrap(), lit(1.5));
        assert_eq!(
            p(r#"{"op":"lit","value":1,"dtype":"float64"}"#).unwrap(),
            lit(1.0)
        );
        assert_eq!(p(r#"{"op":"lit","value":"x"}"#).unwrap(), lit("x"));
        assert_eq!(p(r#"{"op":"lit","value":true}"#).unwrap(), lit(true));
        assert!(matches!(
            p(r#"{"op":"lit","value":"nan","dtype":"float64"}"#).unwrap(),
            Expr::Lit(Scalar::Float64(v)) if v.is_nan()
        ));
        assert_eq!(
            p(r#"{"op":"lit","value":"380166.44986778003","dtype":"float64"}"#).unwrap(),
            lit(380166.44986778003)
        );
        assert_eq!(
            p(r#"{"op":"lit","value":"-inf","dtype":"float64"}"#).unwrap(),
            lit(f64::NEG_INFINITY)
        );
        assert!(p(r#"{"op":"lit","value":"x","dtype":"float64"}"#).is_err());
        assert!(matches!(
            p(r#"{"op":"lit","value":18446744073709551615}"#),
            Err(Error::Overflow(_))
        ));
        assert!(matches!(
            p(r#"{"op":"lit","value":1.5,"dtype":"int64"}"#),
            Err(Error::Plan(_))
        ));
        assert!(matches!(
            p(r#"{"op":"lit","value":"1","dtype":"bool"}"#),
            Err(Error::Plan(_))
        ));
    }

    #[test]
    fn chains_flatten() {
        let mut e = col("a");
        for i in 0..200 {
            e = e + lit(i);
        }
        let e = e.lt(lit(0)) & col("b").lt(col("c")).lt(col("d"));
        let j = e.to_json();
        assert_eq!(
            j["args"][0]["args"][0]["args"].as_array().unwrap().len(),
            201
        );
        assert_eq!(j["args"][1]["args"].as_array().unwrap().len(), 3);
        let text = j.to_string();
        assert_eq!(Expr::from_json_str(&text).unwrap(), e);
        let p = |s: &str| Expr::from_json_str(s).unwrap().to_string();
        assert_eq!(
            p(
                r#"{"op":"sub","args":[{"op":"col","name":"a"},{"op":"lit","value":1},{"op":"lit","value":2}]}"#
            ),
            r#"((col("a") - 1) - 2)"#
        );
        let deep = format!(
            r#"{{"op":"add","args":[{}]}}"#,
            vec![r#"{"op":"lit","value":1}"#; MAX_DEPTH + 1].join(",")
        );
        assert!(matches!(Expr::from_json_str(&deep), Err(Error::Plan(_))));
    }

    #[test]
    fn malformed() {
        for s in [
            r#"{"op":"nope"}"#,
            r#"{"op":"add","args":[{"op":"col","name":"a"}]}"#,
            r#"{"op":"add","args":{"op":"col","name":"a"}}"#,
            r#"{"op":"col"}"#,
            r#"{"op":"cast","dtype":"complex","arg":{"op":"col","name":"a"}}"#,
            r#"[1]"#,
            r#"{"op":"col","name":"a""#,
        ] {
            let err = Expr::from_json_str(s).unwrap_err();
            assert!(matches!(err, Error::Plan(_)), "{s}: {err}");
        }
    }
}

/// The deepest JSON nesting [`from_str_deep`] reads: two levels per expression level (an
/// operator object and its `args` list) for [`MAX_DEPTH`] levels, plus the plan around them.
pub const MAX_JSON_DEPTH: usize = 2 * MAX_DEPTH + 64;

/// The deepest nesting of `[` and `{` in `text` (outside strings).
fn json_depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_str, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_str {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Parses JSON text nested up to [`MAX_JSON_DEPTH`] levels (serde_json alone stops at 128,
/// below what an expression of [`MAX_DEPTH`] levels needs); `what` names the text in
/// errors.
pub(crate) fn from_str_deep<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    let depth = json_depth(text);
    if depth > MAX_JSON_DEPTH {
        return Err(Error::Plan(format!(
            "{what} nests {depth} levels deep, more than {MAX_JSON_DEPTH} (an expression may \
             nest at most {MAX_DEPTH} levels)"
        )));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let v = T::deserialize(&mut de).map_err(|e| Error::Plan(format!("invalid {what}: {e}")))?;
    de.end()
        .map_err(|e| Error::Plan(format!("invalid {what}: {e}")))?;
    Ok(v)
}

#[cfg(test)]
mod deep_tests {
    use super::*;

    #[test]
    fn deep_json_reads_up_to_the_expression_limit() {
        // 200 levels of alternating operators: 400 JSON levels, beyond serde_json's 128.
        let mut e = crate::expr::col("x");
        for _ in 0..100 {
            e = (e + crate::expr::lit(1)) * crate::expr::lit(1);
        }
        let text = e.to_json().to_string();
        assert!(json_depth(&text) > 128);
        assert_eq!(Expr::from_json_str(&text).unwrap(), e);
        let deep = format!(
            "{}{}",
            "[".repeat(MAX_JSON_DEPTH + 1),
            "]".repeat(MAX_JSON_DEPTH + 1)
        );
        let err = from_str_deep::<Value>(&deep, "plan JSON").unwrap_err();
        assert!(err.to_string().contains("levels deep"), "{err}");
        assert_eq!(json_depth(r#"{"a": "[[[{", "b": [1, {"c": "\"]"}]}"#), 3);
    }
}
