package metadata

// AlwaysTargetedReads is how many changed resources a targeted pass reads
// whatever a full pass would cost.
const AlwaysTargetedReads = alwaysTargetedReads
