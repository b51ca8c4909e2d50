// Package tags owns the pure logic of tag synchronisation: tag sets (Set,
// Patch), a cloud's tag rules (Rules, which each cloud's package defines: this
// package never names a cloud) and how a cloud
// compares tag names (NameCase), the reversible label <-> tag codec (Codec),
// the per-Node three-way merge (Merge) and its stored base (Base, with
// each tag's source), the scale-set aggregation of Node proposals
// (Aggregate), the mass-deletion guard (GuardDeletions, DeletionLedger), the tag limit policy (Fit) and tag name filters
// (Filter), and the tag lifecycle of classified resources (Lifecycle). It does
// no I/O and knows no Kubernetes or cloud client.
//
// # A sync cycle for one Node
//
// rules are the cloud's Rules; nc := rules.NameCase() is how it compares tag
// names, and every call that matches names takes it or the rules.
//
//	codec := tags.Codec{Prefix: prefix, Rules: &rules}
//	cloud := filter.Apply(nc, cloudTags)
//	node, fromSkipped := codec.FromLabels(nodeLabels) // then filter.Apply(nc, ...)
//	_, toSkipped := codec.ToLabels(cloud)
//	res := tags.Merge(nc, tags.MergeInput{Base: base, Cloud: cloud, Node: node,
//		Direction: dir, Policy: pol,
//		Hold: tags.SkippedNames(append(fromSkipped, toSkipped...))})
//	fitted, limitSkipped := tags.Fit(cloudTags, res.CloudPatch, rules)
//	res = res.RestrictCloud(fitted)           // and Aggregate(nc, ...) for scale sets
//	changes, _ := codec.LabelChanges(nodeLabels, res.NodePatch)
//	// write fitted and changes (only when not empty), then store res.NewBase
//
// # Tag name case
//
// Whether names differing only in case are one tag belongs to the cloud:
// Rules.CaseInsensitive, as a NameCase from Rules.NameCase. Values always
// compare exactly, and reserved prefixes (Rules.ReservedPrefixes) always
// ignore case, because that is how both clouds check them.
//
// Azure (CaseInsensitive): "Env" and "env" are one tag. Set{"Env": "prod"}
// answers Get(CaseInsensitive, "env") with "prod"; a Set holding both
// spellings is invalid (ValidateSet reports ErrDuplicateName, the codec skips
// both); Filter pattern "env" matches "Env".
//
// AWS (CaseSensitive): "Env" and "env" are two tags. Set{"Env": "prod", "env":
// "dev"} is valid: Get(CaseSensitive, "env") is "dev", Get(CaseSensitive,
// "ENV") finds nothing, and the codec writes two labels, <prefix>/Env and
// <prefix>/env (label keys are case-sensitive too). Nodes proposing Env=a and
// env=b do not conflict in Aggregate; Fit sets env as a new tag, counted
// against the limit of 50, not as an update of Env; Filter pattern "env" does
// not match "Env". "aws:x" and "AWS:x" are both reserved.
//
// One merge, both ways: Base and Node hold {Env: prod} and the cloud now holds
// {env: prod} (someone re-created the tag in lower case).
//
//	tags.Merge(tags.CaseInsensitive, in) // Azure: one tag, same value, respelled:
//	                                     // NodePatch sets env=prod (a label rename),
//	                                     // NewBase {env: prod}
//	tags.Merge(tags.CaseSensitive, in)   // AWS: Env deleted and env added in the cloud:
//	                                     // NodePatch deletes Env and sets env=prod,
//	                                     // NewBase {env: prod}
//
// # Label encoding
//
// Label name parts and values allow at most 63 characters from
// [A-Za-z0-9._-], beginning and ending with an alphanumeric; tag names and
// values are arbitrary Unicode. The codec escapes, byte by byte over the UTF-8
// text, every byte that
//
//   - is outside [A-Za-z0-9._-], or
//   - is '-', '_' or '.' at the first or last position, or
//   - is the '_' of text that already reads as an escape ("x_" followed by two
//     lower-case hex digits),
//
// as "x_" followed by the byte's two lower-case hex digits. Everything else is
// copied. So "env", "cost-center", "cc_1234" and "team.name" encode as
// themselves, "Cost Center" as "Costx_20Center", "a/b:c" as "ax_2fbx_3ac", "é"
// as "x_c3x_a9", "-x-" as "x_2dxx_2d", "x_20" (literally) as "xx_5f20", and the
// empty value as the empty label value.
//
// An escape begins and ends with an alphanumeric, so it may stand anywhere,
// including at either end. Decoding scans left to right and replaces each
// "x_hh" (lower-case hex) by its byte. The hex digits of an escape never
// include 'x', so an escape never overlaps the start of the next one, and a
// literal "x_hh" in the input is always broken up by escaping its '_'; hence
// decoding is unambiguous and Decode(Encode(s)) == s. Decoding is also strict:
// it accepts only the exact text the encoder produces (it re-encodes and
// compares), so "x_41" (an unnecessary escape of "A"), upper-case hex escapes
// of forbidden bytes, invalid UTF-8 and invalid label syntax are reported
// (ErrUndecodable), never guessed at. Each tag name thus has exactly one label
// key, and each managed label at most one tag.
//
// Text longer than 63 characters once encoded is ErrUnrepresentable: reported
// and skipped, never truncated. The "x_" marker was chosen because it is rare
// in real tags (unlike "_x", as in "linux_x64") and because an escape must be
// allowed at the first position, which rules out markers beginning with '_',
// '-' or '.'.
//
// # Three-way merge
//
// Per tag (names matched as the NameCase says), with b the base state, c the
// cloud's and n the Node's (each a value or absent):
//
//   - c == n: agreed, nothing written; NewBase takes it.
//   - spelling (CaseInsensitive only): the cloud's spelling of a name wins. A
//     Node label spelled differently is renamed (when the Node may be
//     written), also in the pass that writes its new value to the cloud (the
//     only case where one name is in both patches); a cloud rename Env->env is
//     therefore a label rename, never a delete plus add. The cloud is never
//     renamed. Under CaseSensitive, spellings are different tags.
//   - only one side changed since b: the change, including a deletion, is
//     written to the other side.
//   - both changed, to different states: a Conflict. Ignore writes nothing;
//     CloudWins writes c to the Node; NodeWins writes n to the cloud. An
//     unresolved conflict keeps its old base entry.
//   - no history (Base nil): union. A tag on one side only is copied to the
//     other; present on both with different values is a Conflict. Nothing is
//     deleted.
//
// Deletions only by intent (TwoWay): MergeInput.From says which side each
// base tag came from (Sources; a tag copied across for the first time
// records the side it came from in MergeResult.From). A disappearance
// crosses over only from that side:
//
//   - the cloud lost a tag that came from the Node (or from neither
//     knowingly): a platform's rewrite. CloudPatch puts it back and
//     Restored names it; the label stays.
//   - the Node lost a tag that did not come from the Node: CloudPatch
//     deletes it, and Unclear names it, so that the caller holds the
//     deletion for a person (GuardDeletions).
//
// Base {env: prod, team: blue}, From {env: cloud, team: node}, cloud {env:
// prod} (a node-pool update dropped team), Node unchanged: CloudPatch sets
// team=blue, Restored [team]. Cloud unchanged, Node {team: blue} (a label
// tidy-up removed env): CloudPatch deletes env, Unclear [env].
//
// A Direction forbids writing one side. A change on a side whose changes cannot
// flow (the Node under CloudToNode, the cloud under NodeToCloud):
//
//   - a tag added there that neither the base nor the other side has (never
//     synced) is left alone, silently, and not recorded in NewBase;
//   - any other change (a new value, a deletion) becomes a Conflict: the
//     source-wins policy (CloudWins under CloudToNode, NodeWins under
//     NodeToCloud) reverts it; otherwise both sides are left as they are.
//
// Conflicts whose policy winner may not be written are left as they are.
//
// Wholesale wipe: when Base holds at least two tags, the cloud none of them,
// and the Node still at least two of them unchanged, some platform rewrote the
// tags and the rules above would delete those labels. Merge sets Wiped and, in
// TwoWay and CloudToNode, proceeds as with no history: a union that never
// deletes. In TwoWay this repairs the cloud from the labels; in CloudToNode
// nothing is deleted and the labels the cloud lost are left alone and dropped
// from NewBase. NodeToCloud never writes the Node, so the usual rules apply
// there (the losses are cloud-side changes: NodeWins repairs them, the other
// policies report them). Deliberate deletions remove keys one at a time and
// still propagate (a single removed key, or the last one, is never a wipe).
//
// On a shared resource, Aggregate counts every Node still holding a tag
// another Node proposes to delete as a vote to keep it: one Node cannot
// delete a pool's tag.
//
// MergeResult.NewBase is what both sides hold once both patches are written.
// When a write is only partly done (Fit, Aggregate, an encoding failure), use
// RestrictCloud / RestrictNode so the dropped keys keep their old base entries.
//
// # Tag lifecycle on classified resources
//
// A metadata object applies one tag set to every resource that carries a
// classifier tag. Lifecycle.Plan decides, per resource and per name, from the
// resource's current tags only (there is no base: the cloud is the only side):
//
//	l := tags.Lifecycle{Opcode: tags.OpAdd, Tags: tags.Set{"env": "prod", "team": "a"},
//		Owned: activeList, Limit: tags.LimitPartial}
//	plan := l.Plan(resourceTags, resourceRules, heldOnThisResource)
//	// write plan.Patch (with plan.Expect for deletions), report plan.Skipped,
//	// remember plan.Held for this resource
//
// Worked examples, Azure rules (names case-insensitive), Tags {env: prod, team: a}:
//
//	current {}                     add     → set env, team
//	current {env: dev}             add     → set team; env skipped (ErrTaken: not ours)
//	current {env: dev}, env owned
//	  and held on this resource    add     → set env (an outside edit, reverted), team
//	current {Env: prod}            update  → set team (Env already holds prod)
//	current {env: dev, team: b}    update  → set env, team
//	current {env: prod, team: x}   delete  Tags {env: "", team: a} → delete env only
//
// Limits: new names need room under Rules.MaxTags. With 13 tags on a DNS
// zone (limit 15) and Tags {c, a, b}, LimitPartial sets a and b (name order)
// and skips c with ErrTooManyTags; LimitStrict writes nothing to that zone and
// reports all three. Names in Lifecycle.Ignore are never read nor written but,
// being on the resource, still count against its limit. A name removed from
// Tags is simply no longer planned: it stays on the resources (released);
// only OpDelete removes tags.
package tags
