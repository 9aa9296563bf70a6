//! Tests of the live-columns analysis on small plans written as JSON.

use super::live_columns;
use crate::engine::plan::Plan;
use serde_json::{json, Value};

fn plan(nodes: Vec<Value>) -> Plan {
    let nodes: Vec<Value> = nodes
        .into_iter()
        .enumerate()
        .map(|(i, mut n)| {
            n["id"] = json!(i);
            if n.get("scope").is_none() {
                n["scope"] = json!(0);
            }
            n
        })
        .collect();
    let text = json!({
        "version": 1,
        "time_dims": 1,
        "scopes": [{"id": 0, "parent": null}, {"id": 1, "parent": 0, "max_iterations": null}],
        "nodes": nodes,
    })
    .to_string();
    Plan::from_json(&text).expect("valid plan")
}

fn input(cols: &[&str]) -> Value {
    json!({"op": "input", "name": "t", "inputs": [], "columns": cols})
}

fn col(name: &str) -> Value {
    json!({"op": "col", "name": name})
}

#[test]
fn a_select_keeps_the_columns_of_every_expression_and_no_other() {
    let p = plan(vec![
        input(&["a", "b", "c", "d"]),
        json!({"op": "filter", "predicate": {"op": "gt", "args": [col("d"), {"op": "lit", "value": 0, "dtype": "int64"}]},
               "inputs": [0], "columns": ["a", "b", "c", "d"]}),
        json!({"op": "select", "exprs": [col("a"), {"op": "add", "args": [col("b"), col("b")]}],
               "inputs": [1], "columns": ["a", "bb"]}),
        json!({"op": "capture", "inputs": [2], "columns": ["a", "bb"]}),
    ]);
    let live = live_columns(&p, &[]);
    assert_eq!(live[0], vec![true, true, false, true]);
    assert_eq!(live[1], vec![true, true, false, false]);
}

#[test]
fn a_capture_of_the_input_keeps_every_column() {
    let p = plan(vec![
        input(&["a", "b"]),
        json!({"op": "capture", "inputs": [0], "columns": ["a", "b"]}),
    ]);
    assert_eq!(live_columns(&p, &[])[0], vec![true, true]);
}

#[test]
fn a_join_reads_its_keys_and_the_vals_read_downstream() {
    let p = plan(vec![
        input(&["k", "x", "y"]),
        input(&["k", "z", "w"]),
        json!({"op": "arrange", "key": [0], "inputs": [0], "columns": ["k", "x", "y"]}),
        json!({"op": "arrange", "key": [0], "inputs": [1], "columns": ["k", "z", "w"]}),
        json!({"op": "join", "inputs": [2, 3], "columns": ["k", "x", "y", "z", "w"]}),
        json!({"op": "select", "exprs": [col("y"), col("w")], "inputs": [4], "columns": ["y", "w"]}),
        json!({"op": "capture", "inputs": [5], "columns": ["y", "w"]}),
    ]);
    let live = live_columns(&p, &[]);
    assert_eq!(live[0], vec![true, false, true]);
    assert_eq!(live[1], vec![true, false, true]);
}

#[test]
fn an_arrangement_keyed_on_a_later_column_maps_it_back() {
    // arrange key [2]: output columns (c, a, b)
    let p = plan(vec![
        input(&["a", "b", "c"]),
        json!({"op": "arrange", "key": [2], "inputs": [0], "columns": ["c", "a", "b"]}),
        json!({"op": "reduce", "agg": {"kind": "group", "aggs": [{"kind": "sum", "column": 1}]},
               "inputs": [1], "columns": ["c", "s"]}),
        json!({"op": "capture", "inputs": [2], "columns": ["c", "s"]}),
    ]);
    let live = live_columns(&p, &[]);
    assert_eq!(live[0], vec![false, true, true]);
}

#[test]
fn row_level_reduces_and_python_functions_read_every_column() {
    let p = plan(vec![
        input(&["k", "x", "y"]),
        json!({"op": "arrange", "key": [0], "inputs": [0], "columns": ["k", "x", "y"]}),
        json!({"op": "reduce", "agg": {"kind": "distinct"}, "inputs": [1], "columns": ["k", "x", "y"]}),
        json!({"op": "select", "exprs": [col("k")], "inputs": [2], "columns": ["k"]}),
        json!({"op": "capture", "inputs": [3], "columns": ["k"]}),
    ]);
    assert_eq!(live_columns(&p, &[])[0], vec![true, true, true]);
    let p = plan(vec![
        input(&["k", "x"]),
        json!({"op": "filter_py", "fn": 1, "inputs": [0], "columns": ["k", "x"]}),
        json!({"op": "select", "exprs": [col("k")], "inputs": [1], "columns": ["k"]}),
        json!({"op": "capture", "inputs": [2], "columns": ["k"]}),
    ]);
    assert_eq!(live_columns(&p, &[])[0], vec![true, true]);
}

#[test]
fn a_count_reads_only_its_key_and_a_pinned_arrangement_everything() {
    let nodes = vec![
        input(&["k", "x"]),
        json!({"op": "arrange", "key": [0], "inputs": [0], "columns": ["k", "x"]}),
        json!({"op": "reduce", "agg": {"kind": "count"}, "inputs": [1], "columns": ["k", "count"]}),
        json!({"op": "capture", "inputs": [2], "columns": ["k", "count"]}),
    ];
    let p = plan(nodes);
    assert_eq!(live_columns(&p, &[])[0], vec![true, false]);
    assert_eq!(live_columns(&p, &[1])[0], vec![true, true]);
}

#[test]
fn a_loop_variable_passes_needs_around_the_loop() {
    // iterate: v = variable(source 1, result 4); the body reads only v's column a, but the
    // result is a concat of v and the entered input, and leave feeds a capture of (a, b).
    let p = plan(vec![
        input(&["a", "b"]),
        json!({"op": "enter", "scope": 1, "inputs": [0], "columns": ["a", "b"]}),
        json!({"op": "variable", "result": 4, "scope": 1, "inputs": [1], "columns": ["a", "b"]}),
        json!({"op": "filter", "predicate": {"op": "gt", "args": [col("a"), {"op": "lit", "value": 0, "dtype": "int64"}]},
               "scope": 1, "inputs": [2], "columns": ["a", "b"]}),
        json!({"op": "concat", "scope": 1, "inputs": [1, 3], "columns": ["a", "b"]}),
        json!({"op": "leave", "inputs": [4], "columns": ["a", "b"]}),
        json!({"op": "select", "exprs": [col("b")], "inputs": [5], "columns": ["b"]}),
        json!({"op": "capture", "inputs": [6], "columns": ["b"]}),
    ]);
    let live = live_columns(&p, &[]);
    assert_eq!(live[0], vec![true, true]);
    assert_eq!(live[2], vec![true, true]);
}
