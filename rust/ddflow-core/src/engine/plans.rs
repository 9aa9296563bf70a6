//! Ready-made plans for the Rust examples, tests and benchmarks (Python builds its own plans
//! through the `ddflow` package; these mirror `dd.algorithms.bfs`).

/// Input node of [`bfs`]'s edges `(src, dst)`.
pub const BFS_EDGES: usize = 0;
/// Input node of [`bfs`]'s roots `(node)`.
pub const BFS_ROOTS: usize = 1;
/// Capture node of [`bfs`]'s output `(node, dist)`.
pub const BFS_CAPTURE: usize = 14;

/// Breadth-first search distances from the roots: roots at distance 0;
/// iterate { join distances with edges, propose `dist + 1` to each neighbour, concat the
/// roots, keep the minimum per node }; capture `(node, dist)`.
pub fn bfs() -> String {
    let col = |n: &str| format!(r#"{{"op":"col","name":"{n}"}}"#);
    let nodes = [
        r#"{"id":0,"op":"input","name":"edges","scope":0,"inputs":[],"columns":["src","dst"]}"#.to_string(),
        r#"{"id":1,"op":"input","name":"roots","scope":0,"inputs":[],"columns":["node"]}"#.to_string(),
        format!(
            r#"{{"id":2,"op":"select","scope":0,"inputs":[1],"columns":["node","dist"],"exprs":[{},{{"op":"lit","value":0}}]}}"#,
            col("node")
        ),
        r#"{"id":3,"op":"arrange","scope":0,"inputs":[0],"columns":["src","dst"],"key":[0]}"#.to_string(),
        r#"{"id":4,"op":"enter","scope":1,"inputs":[2],"columns":["node","dist"]}"#.to_string(),
        r#"{"id":5,"op":"variable","scope":1,"inputs":[4],"columns":["node","dist"],"result":12}"#.to_string(),
        r#"{"id":6,"op":"arrange","scope":1,"inputs":[5],"columns":["node","dist"],"key":[0]}"#.to_string(),
        r#"{"id":7,"op":"enter_arrangement","scope":1,"inputs":[3],"columns":["src","dst"]}"#.to_string(),
        r#"{"id":8,"op":"join","scope":1,"inputs":[6,7],"columns":["node","dist","dst"],"kind":"join"}"#.to_string(),
        format!(
            r#"{{"id":9,"op":"select","scope":1,"inputs":[8],"columns":["node","dist"],"exprs":[{},{{"op":"add","args":[{},{{"op":"lit","value":1}}]}}]}}"#,
            col("dst"),
            col("dist")
        ),
        r#"{"id":10,"op":"concat","scope":1,"inputs":[9,4],"columns":["node","dist"]}"#.to_string(),
        r#"{"id":11,"op":"arrange","scope":1,"inputs":[10],"columns":["node","dist"],"key":[0]}"#.to_string(),
        r#"{"id":12,"op":"reduce","scope":1,"inputs":[11],"columns":["node","dist"],"agg":{"kind":"min","column":0}}"#.to_string(),
        r#"{"id":13,"op":"leave","scope":0,"inputs":[12],"columns":["node","dist"]}"#.to_string(),
        r#"{"id":14,"op":"capture","scope":0,"inputs":[13],"columns":["node","dist"]}"#.to_string(),
    ];
    format!(
        r#"{{"version":1,"time_dims":1,"scopes":[{{"id":0,"parent":null}},{{"id":1,"parent":0}}],"nodes":[{}]}}"#,
        nodes.join(",")
    )
}

/// Capture node of [`bfs_counts`]'s output `(dist, count)`.
pub const BFS_COUNTS_CAPTURE: usize = 18;

/// The distance-counts job: [`bfs`], then the number of nodes at each distance
/// (`dd.algorithms.bfs(edges, roots).count(by="dist")`, which projects to `dist` first, as
/// differential-dataflow's `bfs(..).map(|(_, d)| d).count()`). The BFS capture stays at
/// [`BFS_CAPTURE`]; the counts are captured at [`BFS_COUNTS_CAPTURE`].
pub fn bfs_counts() -> String {
    let base = bfs();
    let extra = [
        r#"{"id":15,"op":"select","scope":0,"inputs":[13],"columns":["dist"],"exprs":[{"op":"col","name":"dist"}]}"#,
        r#"{"id":16,"op":"arrange","scope":0,"inputs":[15],"columns":["dist"],"key":[0]}"#,
        r#"{"id":17,"op":"reduce","scope":0,"inputs":[16],"columns":["dist","count"],"agg":{"kind":"count"}}"#,
        r#"{"id":18,"op":"capture","scope":0,"inputs":[17],"columns":["dist","count"]}"#,
    ];
    let cut = base.rfind("]}").expect("plan ends with nodes");
    format!("{},{}]}}", &base[..cut], extra.join(","))
}
