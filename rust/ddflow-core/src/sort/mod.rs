//! LSD radix sort and consolidation of updates.
