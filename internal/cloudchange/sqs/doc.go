// Package sqs is the AWS event source (cloudchange.Source, name "sqs"): an
// Amazon EventBridge rule sends tag changes and EC2 instance state changes
// to an SQS queue, and the Source long-polls the queue and publishes one
// cloudchange.Change per message to a cloudchange.Sink.
//
// # Setup
//
// An EventBridge rule on the default event bus, with the queue as its
// target, matching the two events tagsync reads:
//
//	{"source": ["aws.tag", "aws.ec2"],
//	 "detail-type": ["Tag Change on Resource", "EC2 Instance State-change Notification"]}
//
// The queue's access policy lets EventBridge send to it:
//
//	{"Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"},
//	 "Action": "sqs:SendMessage", "Resource": QUEUE_ARN,
//	 "Condition": {"ArnEquals": {"aws:SourceArn": RULE_ARN}}}
//
// The queue should have a dead-letter queue (RedrivePolicy
// {"deadLetterTargetArn": DLQ_ARN, "maxReceiveCount": 5}). Its visibility
// timeout is how soon a message whose pass failed (or whose receiver
// crashed) is received again; a pass may take longer, the source keeps
// its message hidden meanwhile (Delivery, below). tagsync's credentials
// (IRSA, EKS Pod Identity, static keys: Config.AWS, as for the AWS
// provider) need only sqs:ReceiveMessage, sqs:DeleteMessage (which also
// allows DeleteMessageBatch), sqs:ChangeMessageVisibility (which also
// allows ChangeMessageVisibilityBatch) and sqs:GetQueueAttributes, on that
// queue only.
//
// # Events
//
// A message body is an EventBridge event: {"version", "id", "detail-type",
// "source", "account", "time", "region", "resources": [ARN...], "detail"}.
// Parse reads two kinds (pure; parse.go):
//
//   - source aws.tag, detail-type "Tag Change on Resource", detail
//     {"changed-tag-keys": [...], "service": "ec2", "resource-type":
//     "instance", "version": 3, "tags": {...}}, where "tags" is the
//     resource's whole tag set after the change (a deleted key is in
//     changed-tag-keys and not in tags): a change of Kind KindWrite with
//     Tags = detail.tags (nil when the detail has no "tags", so that a pass
//     reads them).
//   - source aws.ec2, detail-type "EC2 Instance State-change Notification",
//     detail {"instance-id", "state"} with state pending, running,
//     stopping, stopped, shutting-down or terminated: Kind KindState, or
//     KindDelete for terminated; Tags nil.
//
// Either way Cloud is "aws", Resource the ARN resources[0], ID the event's
// id (the same on every redelivery), Time its time, Source "sqs". The
// fields are as AWS documents them: "Monitor tag changes with serverless
// workflows and Amazon EventBridge"
// (https://docs.aws.amazon.com/tag-editor/latest/userguide/tag-monitor.html),
// "Tags events" (https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-tag.html)
// and "State change events for Amazon EC2 instances"
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instance-state-changes.html).
//
// A third kind names who wrote tags (callers.go): source aws.ec2,
// aws.autoscaling, aws.elasticloadbalancing or aws.tagging (the Resource
// Groups Tagging API), detail-type "AWS API Call via CloudTrail", a
// CloudTrail record of a successful CreateTags, DeleteTags,
// CreateOrUpdateTags, AddTags, RemoveTags, TagResources or UntagResources. It
// is no change: the source keeps its writer (the record's userIdentity)
// for the resources it names and gives it to the tag change of the same
// resource dated within seconds of it that removed only keys the call
// deleted (Change.Writer): a call that set tags, or deleted others,
// vouches for no removal. A tag change that
// removed tags waits Config.AttributionWait for its call when the call
// has not come first.
//
// Any other well-formed event (another source or detail-type, e.g.
// aws.tag's "Invalid Effective Tag Policy") is deleted unpublished and
// counted as ignored. A body that is not such an event (not JSON, no
// source or detail-type, a known event without id, time, resource or with
// a detail of the wrong shape) is poison: counted, logged and left on the
// queue, whose redrive policy moves it to the dead-letter queue after
// maxReceiveCount receives.
//
// # Delivery
//
// Each message is published on its own (one Publish of one Change), so
// that a failed pass sends back exactly the message that caused it. A
// message is deleted only after its done(nil): when the passes it
// triggered completed. Messages done together are deleted together
// (DeleteMessageBatch, up to 10). After done(err) it is left alone and SQS
// delivers it again once its visibility timeout ends; a message received
// more often than Config.PoisonReceiveCount is still published but also
// counted and logged as poison. Receives ask for at most as many messages
// as there are free slots of Config.MaxInFlight (and at most 10), so that
// the messages received and not yet done never exceed it.
//
// While a message's passes run (published, done not yet called) the
// source keeps it hidden, so that a pass longer than the visibility
// timeout does not get it received (and its passes run) twice, nor moved
// to the dead-letter queue while it is worked on: every half visibility
// timeout a heartbeat sets the visibility timeout of every such message
// to the full timeout again, up to 10 messages in one
// ChangeMessageVisibilityBatch. The timeout is the queue's
// VisibilityTimeout attribute, read at start and after a failure (at
// least 1 s; DefaultVisibilityTimeout, 30 s, while it cannot be read), and
// receives ask for it explicitly, so that the heartbeat and the receives
// agree. done ends the heartbeat of its message: after done(nil) it is
// deleted; after done(err) it is left alone, as above, and received again
// once the last extension ends (within one visibility timeout). A message
// held for Config.MaxHold (DefaultMaxHold, 15 min; SQS allows 12 h) is no
// longer extended, so that a stuck pass does not hide it for ever: SQS
// delivers it again every visibility timeout, each receive counting
// towards the redrive policy's maxReceiveCount; the expiry is counted and
// logged. A failed extension is counted and logged at V(1); the message
// may then be received again while its passes run. A message received
// again while its passes run is not published again (the hub would take
// it for a redelivery and be done with it at once, and the message would
// be deleted before its passes succeed): the source keeps the receipt
// handle of its latest receive, the one SQS deletes it with, deletes it
// when the passes of its first receive succeed and leaves it when they
// fail (MetricReReceived).
//
// # Health
//
// Health is down, with the reason in words, while SQS cannot be read: the
// queue does not exist (AWS.SimpleQueueService.NonExistentQueue), access
// is denied, the credentials are expired or invalid, SQS cannot be
// reached. The reason is logged once per change. The source waits
// (1 s doubling to 1 min, WithBackoff), reads the queue's attributes again
// and receives; the first successful receive makes it up again. While up,
// Reason warns when the queue has no dead-letter queue.
//
// # Metrics
//
// tagsync_events_sqs_messages_received_total, _deleted_total,
// _ignored_total, _failed_total (done with an error),
// _poison_total{reason="unparseable"|"receive_count"},
// tagsync_events_sqs_receive_errors_total{reason="queue_gone"|
// "access_denied"|"credentials"|"unreachable"|"throttled"|"other"},
// tagsync_events_sqs_delete_errors_total,
// tagsync_events_sqs_visibility_extensions_total, _extension_errors_total,
// tagsync_events_sqs_messages_hold_expired_total, the gauges
// tagsync_events_sqs_messages_in_flight and tagsync_events_sqs_up, and
// every HTTP request in the AWS provider's
// tagsync_cloud_requests_total{provider="aws",operation="sqs:ReceiveMessage"}
// (cloud.RequestMetrics; Source.Calls).
package sqs
