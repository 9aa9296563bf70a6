//! A first batch whose dtype disagrees with a column the plan links it with (a join key, a
//! loop variable's source) is refused at `push`, naming both columns and the operator; the
//! dataflow keeps running on what it had accepted.

use ddflow_core::encoding::DType;
use ddflow_core::engine::column::{Column, NoCallbacks};
use ddflow_core::engine::plan::Plan;
use ddflow_core::engine::plans::bfs as bfs_plan;
use ddflow_core::engine::Engine;
use ddflow_core::Time;
use std::sync::Arc;

fn int_col(v: &[i64]) -> Column {
    Column {
        dtype: DType::Int64,
        words: v.iter().map(|&x| x as u64).collect(),
    }
}

fn float_col(v: &[f64]) -> Column {
    Column {
        dtype: DType::Float64,
        words: v.iter().map(|x| x.to_bits()).collect(),
    }
}

fn engine() -> Engine {
    let plan = Plan::from_json(&bfs_plan()).expect("plan parses");
    Engine::new(plan, 1, Arc::new(NoCallbacks)).expect("engine")
}

/// Runs to time 5 and returns the captured `(node, dist)` updates' count.
fn finish(e: &mut Engine) -> usize {
    e.advance_input(0, Time::scalar(5)).unwrap();
    e.advance_input(1, Time::scalar(5)).unwrap();
    e.run_until(Time::scalar(5)).unwrap();
    e.capture_take(14).unwrap().times.len()
}

#[test]
fn join_key_of_another_dtype_is_refused_at_push() {
    let mut e = engine();
    e.push(1, vec![int_col(&[0])], vec![Time::scalar(0)], vec![1])
        .unwrap();
    let err = e
        .push(
            0,
            vec![float_col(&[0.0]), float_col(&[1.0])],
            vec![Time::scalar(0)],
            vec![1],
        )
        .expect_err("float keys beside int keys");
    let text = err.to_string();
    assert!(text.contains("float64") && text.contains("int64"), "{text}");
    assert!(text.contains("column \"src\""), "{text}");
    assert!(text.contains("column \"node\""), "{text}");
    assert!(text.contains("join"), "{text}");
    // The dataflow is not wedged: int64 edges are accepted and it runs to completion.
    e.push(
        0,
        vec![int_col(&[0, 1]), int_col(&[1, 2])],
        vec![Time::scalar(0); 2],
        vec![1, 1],
    )
    .unwrap();
    assert_eq!(finish(&mut e), 3);
}

#[test]
fn whichever_input_comes_first_fixes_the_dtype() {
    let mut e = engine();
    e.push(
        0,
        vec![float_col(&[0.0]), float_col(&[1.0])],
        vec![Time::scalar(0)],
        vec![1],
    )
    .unwrap();
    let err = e
        .push(1, vec![int_col(&[0])], vec![Time::scalar(0)], vec![1])
        .expect_err("int roots beside float edges");
    assert!(err.to_string().contains("column \"node\""), "{err}");
    e.push(1, vec![float_col(&[0.0])], vec![Time::scalar(0)], vec![1])
        .unwrap();
    assert_eq!(finish(&mut e), 2);
}

#[test]
fn empty_first_batches_fix_nothing_they_could_not() {
    // Both inputs' first batches agree: nothing is refused.
    let mut e = engine();
    e.push(1, vec![int_col(&[])], vec![], vec![]).unwrap();
    e.push(0, vec![int_col(&[]), int_col(&[])], vec![], vec![])
        .unwrap();
    e.push(1, vec![int_col(&[0])], vec![Time::scalar(1)], vec![1])
        .unwrap();
    e.push(
        0,
        vec![int_col(&[0]), int_col(&[4])],
        vec![Time::scalar(1)],
        vec![1],
    )
    .unwrap();
    assert_eq!(finish(&mut e), 2);
}
