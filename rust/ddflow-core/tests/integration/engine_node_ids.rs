//! Node ids that name no input (another operator, or no node at all) are refused with an
//! error by every input call, never a panic, and the engine runs on afterwards.

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

#[test]
fn input_calls_with_a_node_that_is_no_input_are_errors() {
    let plan = Plan::from_json(&bfs_plan()).expect("plan parses");
    let nodes = plan.nodes.len();
    let mut e = Engine::new(plan, 1, Arc::new(NoCallbacks)).expect("engine");
    for node in [2, nodes, nodes + 1, 1 << 40, usize::MAX] {
        let pushed = e.push(node, vec![int_col(&[1])], vec![Time::scalar(0)], vec![1]);
        let text = pushed.expect_err("push").to_string();
        assert!(text.contains(&format!("node {node}")), "{text}");
        assert!(e.advance_input(node, Time::scalar(1)).is_err());
        assert!(e.close_input(node).is_err());
    }
    e.push(1, vec![int_col(&[0])], vec![Time::scalar(0)], vec![1])
        .expect("the engine runs on");
}
