//! Interesting times: where a reduce output may change given old and new input times.
