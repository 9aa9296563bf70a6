//! An engine marks every string id its state holds (the string collector's roots, see
//! `string_gc`): a BFS over string node names on 1 and 2 workers, with updates in flight at
//! future times, marks every name of a live edge and every name the output holds, and no
//! collection could free them.

use ddflow_core::encoding::{DType, Interner};
use ddflow_core::engine::column::{Column, NoCallbacks};
use ddflow_core::engine::plan::Plan;
use ddflow_core::engine::plans::bfs as bfs_plan;
use ddflow_core::engine::Engine;
use ddflow_core::string_gc::{MarkStrings, Marks};
use ddflow_core::Time;
use std::sync::Arc;

fn str_col(ids: &[u64]) -> Column {
    Column {
        dtype: DType::Str,
        words: ids.to_vec(),
    }
}

fn names(prefix: &str, n: usize) -> Vec<u64> {
    let texts: Vec<String> = (0..n).map(|i| format!("marks-{prefix}-{i}")).collect();
    let mut ids = Vec::new();
    Interner::intern_all(texts.iter().map(String::as_str), &mut ids);
    ids
}

fn marks_of(e: &Engine, bound: u64) -> Marks {
    let mut m = Marks::new(bound as usize + 1);
    e.mark_strings(&mut m);
    m
}

#[test]
fn every_live_string_of_an_engine_is_marked() {
    for workers in [1, 2] {
        let plan = Plan::from_json(&bfs_plan()).expect("plan parses");
        let mut e = Engine::new(plan, workers, Arc::new(NoCallbacks)).expect("engine");
        let nodes = names(&format!("w{workers}"), 50);
        let src: Vec<u64> = (0..49).map(|i| nodes[i]).collect();
        let dst: Vec<u64> = (1..50).map(|i| nodes[i]).collect();
        e.push(
            1,
            vec![str_col(&nodes[..1])],
            vec![Time::scalar(0)],
            vec![1],
        )
        .unwrap();
        e.push(
            0,
            vec![str_col(&src), str_col(&dst)],
            vec![Time::scalar(0); 49],
            vec![1; 49],
        )
        .unwrap();
        // Updates at a future time: queued or held, not yet in any trace.
        let late = names(&format!("late{workers}"), 5);
        e.push(
            0,
            vec![str_col(&late), str_col(&late)],
            vec![Time::scalar(3); 5],
            vec![1; 5],
        )
        .unwrap();
        let bound = *nodes.iter().chain(&late).max().unwrap();
        let before = marks_of(&e, bound);
        for &id in nodes.iter().chain(&late) {
            assert!(before.get(id as u32), "{workers} workers: queued id {id}");
        }
        e.advance_input(0, Time::scalar(2)).unwrap();
        e.advance_input(1, Time::scalar(2)).unwrap();
        e.run_until(Time::scalar(2)).unwrap();
        let after = marks_of(&e, bound);
        for &id in nodes.iter().chain(&late) {
            assert!(
                after.get(id as u32),
                "{workers} workers: id {id} after the run"
            );
        }
    }
}
