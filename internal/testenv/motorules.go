package testenv

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// AWSRules front moto_server with the limits AWS enforces and moto does
// not, so that a test on moto fails where AWS would. Each rule names the
// AWS document or error it follows; docs/testing.md lists them all.
//
// Requests are told apart by the service in their SigV4 credential scope
// (ec2, autoscaling, tagging) and, for the query protocol, by Action.
type AWSRules struct {
	proxy     *httputil.ReverseProxy
	direct    string // moto's own URL, to ask what it has
	throttle  ec2Throttle
	instances instanceSet
	index     tagIndex
	log       awsCallLog
	events    awsEvents
}

// MaxEC2FilterValues is the most values EC2 accepts in one filter of a
// Describe call: FilterLimitExceeded, "The maximum number of filter values
// specified on a single call is 200" (EC2's answer to a DescribeInstances
// with more; the legacy in-tree AWS cloud provider batches instance filters
// by 150 for it, cloud-provider-aws by 100). EC2 documents no limit on the
// number of filters in one call, so the rules set none.
const MaxEC2FilterValues = 200

// MaxEC2FilterValueLength is the longest value EC2 accepts in a filter:
// FilterLimitExceeded, "The maximum length for a filter value is 255
// characters" (EC2's answer to a DescribeInstances with a longer one, as
// its users report it). A 256-character tag value cannot be searched for
// by a tag:<key> filter.
const MaxEC2FilterValueLength = 255

// MaxEC2IDsPerCall is the most resource IDs one EC2 call may name: the EC2
// API reference for CreateTags and DeleteTags (ResourceId.N, "Constraints:
// Up to 1000 resource IDs"), and the EC2 developer guide, "Pagination"
// ("you should not specify more than 1,000 IDs in a single call") for the
// Describe calls' ID lists (InstanceId.N).
const MaxEC2IDsPerCall = 1000

// MaxEC2TagKeyLength and MaxEC2TagValueLength are EC2's tag key and value
// lengths in Unicode characters, from the EC2 API reference's Tag data type
// ("Tag keys are case-sensitive and accept a maximum of 127 Unicode
// characters. May not begin with aws:"; values "a maximum of 256 Unicode
// characters"). The EC2 user guide's tag restrictions and the general
// tagging pages say 128 for keys; the API reference is the stricter, so
// code within it is within both.
const (
	MaxEC2TagKeyLength   = 127
	MaxEC2TagValueLength = 256
)

// MaxTagsPerResource is EC2's and Auto Scaling's tags per resource (EC2 API
// reference, CreateTags: "Each resource can have a maximum of 50 tags";
// Auto Scaling user guide, tag restrictions: 50 per group). Tags whose key
// starts with aws: do not count (EC2 user guide, tag restrictions). moto
// enforces 50 on EC2 itself, and counts a resource's aws: tags that are
// already there; the rules refuse one Auto Scaling call that sets more than
// 50 tags on one group.
const MaxTagsPerResource = 50

// MaxAutoScalingTagKeyLength and MaxAutoScalingTagValueLength are the Auto
// Scaling API reference's Tag data type: key 1 to 128, value 0 to 256.
const (
	MaxAutoScalingTagKeyLength   = 128
	MaxAutoScalingTagValueLength = 256
)

// The Resource Groups Tagging API's GetResources limits, from its API
// reference (https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_GetResources.html):
// TagFilters, "A request can include up to 50 keys, and each key can
// include up to 20 values", and "You can't specify both this parameter and
// the ResourceArnList parameter in the same request. If you do, you get an
// Invalid Parameter exception"; ResourcesPerPage, "a minimum of 1 item and
// the maximum of 100 items"; ResourceARNList, "a minimum of 1 and a maximum
// of 100 ARNs". moto takes more of each. AWS answers
// InvalidParameterException (HTTP 400).
const (
	MaxTaggingTagFilters       = 50
	MaxTaggingFilterValues     = 20
	MaxTaggingResourcesPerPage = 100
	MaxTaggingARNs             = 100
)

var (
	// filterValueKey matches an EC2 query parameter Filter.<n>.Value.<m>.
	filterValueKey = regexp.MustCompile(`^Filter\.([0-9]+)\.Value\.[0-9]+$`)
	// ec2IDListKey matches the EC2 ID list parameters: ResourceId.<n>
	// (CreateTags, DeleteTags) and <Type>Id.<n> (DescribeInstances'
	// InstanceId.<n> and the like).
	ec2IDListKey = regexp.MustCompile(`^[A-Za-z]*Id\.[0-9]+$`)
	// ec2TagKey matches Tag.<n>.Key of CreateTags and DeleteTags.
	ec2TagKey = regexp.MustCompile(`^Tag\.([0-9]+)\.Key$`)
	// asTagKey matches Tags.member.<n>.Key of Auto Scaling's
	// CreateOrUpdateTags and DeleteTags.
	asTagKey = regexp.MustCompile(`^Tags\.member\.([0-9]+)\.Key$`)
	// credentialScope finds the service of a SigV4 Authorization header.
	credentialScope = regexp.MustCompile(`Credential=[^/]*/[0-9]+/[^/]+/([^/]+)/aws4_request`)
)

// startAWSRules serves the rules in front of target on a loopback port and
// returns them, their URL and a function that stops them.
func startAWSRules(target string) (*AWSRules, string, func(), error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	rules := &AWSRules{proxy: httputil.NewSingleHostReverseProxy(u), direct: target}
	rules.index.delay = DefaultTaggingIndexDelay
	srv := &http.Server{Handler: rules}
	go func() { _ = srv.Serve(ln) }()
	return rules, "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// awsService returns the service a request is signed for ("ec2",
// "autoscaling", "tagging", ...), or "" when it is not signed.
func awsService(r *http.Request) string {
	if m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		return m[1]
	}
	return ""
}

// ServeHTTP refuses a request AWS would refuse and passes the others to
// moto, and counts each signed request with its answer (Calls).
func (a *AWSRules) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	service, caller := awsService(r), callerOf(r)
	var form url.Values
	if r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ = url.ParseQuery(string(body))
	}
	if service != "" {
		rec := &callRecorder{ResponseWriter: w}
		defer func() {
			a.log.record(AWSCall{AccessKey: caller.accessKey, Op: awsOp(service, r, form), Error: rec.code()})
		}()
		w = rec
	}
	a.serve(w, r, service, caller, form)
}

// serve is ServeHTTP once the request is read.
func (a *AWSRules) serve(w http.ResponseWriter, r *http.Request, service string, caller awsCaller, form url.Values) {
	action := form.Get("Action")
	if service == "sts" && action == "GetCallerIdentity" {
		a.answerIdentity(w, caller)
		return
	}
	if form != nil {
		switch service {
		case "autoscaling":
			if code, msg := autoScalingRefusal(form); code != "" {
				writeQueryError(w, http.StatusBadRequest, code, msg)
				return
			}
		default: // EC2, and unsigned requests as before
			if service == "ec2" && !a.throttle.take(caller.throttleKey(), action, form) {
				// EC2 developer guide, "Request throttling": RequestLimitExceeded;
				// the SDKs retry it as a throttling error (HTTP 503).
				writeEC2ErrorStatus(w, http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded.")
				return
			}
			if code, msg := ec2Refusal(form); code != "" {
				writeEC2Error(w, code, msg)
				return
			}
			if service == "ec2" {
				code, msg, err := a.instanceRefusal(r.Context(), caller, action, form)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				if code != "" {
					writeEC2Error(w, code, msg)
					return
				}
			}
		}
	}
	if target := r.Header.Get("X-Amz-Target"); service == "tagging" && !a.throttle.takeTagging(caller, target[strings.LastIndex(target, ".")+1:]) {
		writeJSONError(w, http.StatusBadRequest, "ThrottledException", "Rate exceeded")
		return
	}
	if service == "tagging" && strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".GetResources") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if msg := getResourcesRefusal(body); msg != "" {
			writeJSONError(w, http.StatusBadRequest, "InvalidParameterException", msg)
			return
		}
	}
	if service == "tagging" {
		switch target := r.Header.Get("X-Amz-Target"); {
		case strings.HasSuffix(target, ".TagResources"), strings.HasSuffix(target, ".UntagResources"):
			a.serveTaggingWrite(w, r, caller, strings.HasSuffix(target, ".UntagResources"))
			return
		case strings.HasSuffix(target, ".GetResources") && hasARNList(r):
			a.serveGetResources(w, r, caller)
			return
		}
	}
	if changesInstances(service, action) {
		a.instances.gen.Add(1)
		defer a.instances.gen.Add(1)
	}
	if service == "ec2" && (action == "CreateTags" || action == "DeleteTags") && (a.indexDelay() > 0 || a.observed()) {
		a.recordTagWrite(w, r, caller, form)
		return
	}
	if a.indexDelay() > 0 && service == "tagging" && strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".GetResources") {
		a.serveGetResources(w, r, caller)
		return
	}
	a.proxy.ServeHTTP(w, r)
}

// ec2Refusal returns the error code and message EC2 answers form with, or
// "" when EC2 takes it.
func ec2Refusal(form url.Values) (code, msg string) {
	counts := map[string]int{}
	ids := 0
	for key := range form {
		if m := filterValueKey.FindStringSubmatch(key); m != nil {
			counts[m[1]]++
			if utf8.RuneCountInString(form.Get(key)) > MaxEC2FilterValueLength {
				return "FilterLimitExceeded", fmt.Sprintf("The maximum length for a filter value is %d characters", MaxEC2FilterValueLength)
			}
		}
		if ec2IDListKey.MatchString(key) {
			ids++
		}
	}
	for _, n := range counts {
		if n > MaxEC2FilterValues {
			return "FilterLimitExceeded", fmt.Sprintf("The maximum number of filter values specified on a single call is %d", MaxEC2FilterValues)
		}
	}
	if ids > MaxEC2IDsPerCall {
		return "InvalidParameterValue", fmt.Sprintf("The request names %d resource IDs; at most %d are allowed in one call", ids, MaxEC2IDsPerCall)
	}
	switch action := form.Get("Action"); action {
	case "CreateTags", "DeleteTags":
		return tagRefusal(form, ec2TagKey, "Tag.%s.Value", action == "DeleteTags", MaxEC2TagKeyLength, MaxEC2TagValueLength)
	}
	return "", ""
}

// getResourcesRefusal returns the message the Tagging API refuses a
// GetResources body with, or "" when it takes it.
func getResourcesRefusal(body []byte) string {
	var in struct {
		ResourcesPerPage *int
		ResourceARNList  []string
		TagFilters       []struct {
			Key    string
			Values []string
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return "" // moto says what is wrong with it
	}
	switch {
	case len(in.TagFilters) > MaxTaggingTagFilters:
		return fmt.Sprintf("TagFilters has %d keys; a request can include up to %d", len(in.TagFilters), MaxTaggingTagFilters)
	case in.ResourcesPerPage != nil && (*in.ResourcesPerPage < 1 || *in.ResourcesPerPage > MaxTaggingResourcesPerPage):
		return fmt.Sprintf("ResourcesPerPage %d is outside 1 to %d", *in.ResourcesPerPage, MaxTaggingResourcesPerPage)
	case len(in.ResourceARNList) > MaxTaggingARNs:
		return fmt.Sprintf("ResourceARNList has %d ARNs; at most %d are allowed", len(in.ResourceARNList), MaxTaggingARNs)
	case len(in.ResourceARNList) > 0 && len(in.TagFilters) > 0:
		return "You can't specify both TagFilters and ResourceARNList in the same request"
	}
	for _, f := range in.TagFilters {
		if len(f.Values) > MaxTaggingFilterValues {
			return fmt.Sprintf("the tag filter of key %s has %d values; each key can include up to %d", f.Key, len(f.Values), MaxTaggingFilterValues)
		}
	}
	return ""
}

// writeJSONError answers as the AWS JSON protocol (the Tagging API) does.
func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "Message": msg})
}

// autoScalingRefusal returns the error code and message Auto Scaling
// answers form with, or "" when it takes it.
func autoScalingRefusal(form url.Values) (code, msg string) {
	action := form.Get("Action")
	if action != "CreateOrUpdateTags" && action != "DeleteTags" {
		return "", ""
	}
	perGroup := map[string]int{}
	for key := range form {
		if m := asTagKey.FindStringSubmatch(key); m != nil && !isAWSKey(form.Get(key)) {
			perGroup[form.Get("Tags.member."+m[1]+".ResourceId")]++
		}
	}
	for group, n := range perGroup {
		if n > MaxTagsPerResource {
			return "ValidationError", fmt.Sprintf("%d tags for Auto Scaling group %s in one call; a group has at most %d tags", n, group, MaxTagsPerResource)
		}
	}
	return tagRefusal(form, asTagKey, "Tags.member.%s.Value", action == "DeleteTags", MaxAutoScalingTagKeyLength, MaxAutoScalingTagValueLength)
}

// tagRefusal checks the tags of a tag write: no key with the reserved aws:
// prefix (in any case), keys of 1 to maxKey characters, values of at most
// maxValue. Deletions name keys only, so only the prefix applies to them.
func tagRefusal(form url.Values, keyParam *regexp.Regexp, valueParam string, deletion bool, maxKey, maxValue int) (code, msg string) {
	var keys []string
	for key := range form {
		if keyParam.MatchString(key) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, param := range keys {
		k := form.Get(param)
		if isAWSKey(k) {
			return "InvalidParameterValue", fmt.Sprintf("Value ( %s ) for parameter key is invalid. Tag keys starting with 'aws:' are reserved for internal use", k)
		}
		if deletion {
			continue
		}
		if n := utf8.RuneCountInString(k); n == 0 || n > maxKey {
			return "InvalidParameterValue", fmt.Sprintf("Tag key exceeds the maximum length of %d characters", maxKey)
		}
		n := keyParam.FindStringSubmatch(param)[1]
		if v := form.Get(fmt.Sprintf(valueParam, n)); utf8.RuneCountInString(v) > maxValue {
			return "InvalidParameterValue", fmt.Sprintf("Tag value exceeds the maximum length of %d characters", maxValue)
		}
	}
	return "", ""
}

// isAWSKey reports whether a tag key has the prefix AWS reserves for its own
// tags: aws: in any case.
func isAWSKey(k string) bool {
	return len(k) >= 4 && strings.EqualFold(k[:4], "aws:")
}

// writeEC2Error answers as the EC2 query API does: HTTP 400 with an XML
// error document.
func writeEC2Error(w http.ResponseWriter, code, msg string) {
	writeEC2ErrorStatus(w, http.StatusBadRequest, code, msg)
}

// writeEC2ErrorStatus is writeEC2Error with another HTTP status.
func writeEC2ErrorStatus(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>testenv-aws-rules</RequestID></Response>`, code, xmlEscape(msg))
}

// writeQueryError answers as the AWS query protocol of Auto Scaling does:
// an ErrorResponse document.
func writeQueryError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>testenv-aws-rules</RequestId></ErrorResponse>`, code, xmlEscape(msg))
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xmlEscapeText(&b, s)
	return b.String()
}

func xmlEscapeText(w io.Writer, s string) error { return xml.EscapeText(w, []byte(s)) }

// awsCaller is who a request speaks for: its access key, its region and
// moto's account header (x-moto-account-id, with which tests give each
// test an account of its own). The rules ask moto in the caller's name and
// keep per-account, per-region state (instances, throttling buckets) by
// it, as AWS does.
type awsCaller struct {
	accessKey, region, account string
}

// credentialParts splits a SigV4 Authorization header's credential scope.
var credentialParts = regexp.MustCompile(`Credential=([^/]*)/[0-9]+/([^/]+)/[^/]+/aws4_request`)

// callerOf returns the caller of r.
func callerOf(r *http.Request) awsCaller {
	c := awsCaller{account: r.Header.Get("x-moto-account-id"), accessKey: MotoAccessKeyID, region: MotoRegion}
	if m := credentialParts.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		c.accessKey, c.region = m[1], m[2]
	}
	return c
}

// key names the caller's account and region.
func (c awsCaller) key() string { return c.account + "|" + c.accessKey + "|" + c.region }

// throttleKey names the EC2 buckets the caller spends: EC2 throttles "for
// each AWS account on a per-Region basis", so every client of an account
// (Karpenter, the cluster autoscaler, the cloud controller, tagsync)
// spends the same buckets whatever its access key. A caller that names no
// account (moto's default one) is taken as an account of its own per
// access key, so tests sharing a moto do not drain each other's buckets.
func (c awsCaller) throttleKey() string {
	if c.account != "" {
		return c.account + "|" + c.region
	}
	return "key:" + c.accessKey + "|" + c.region
}

// config is an aws.Config that reaches moto at direct as the caller.
func (c awsCaller) config(direct string) aws.Config {
	cfg := motoConfig(direct)
	cfg.Region = c.region
	cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(c.accessKey, MotoSecretAccessKey, ""))
	if c.account != "" {
		cfg.HTTPClient = accountClient{account: c.account}
	}
	return cfg
}

// accountClient sends requests with moto's account header.
type accountClient struct{ account string }

func (a accountClient) Do(r *http.Request) (*http.Response, error) {
	r.Header.Set("x-moto-account-id", a.account)
	return http.DefaultClient.Do(r)
}
