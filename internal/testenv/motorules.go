package testenv

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
)

// awsRules front moto_server with the limits AWS enforces and moto does
// not, so that a test on moto fails where AWS would. Each rule names the
// AWS document or error it follows.
//
//   - EC2 filters: at most 200 values in one filter
//     (FilterLimitExceeded: "The maximum number of filter values specified
//     on a single call is 200", the EC2 API's answer to a DescribeInstances
//     with more; the legacy in-tree AWS cloud provider batches instance
//     filters by 150 for it, cloud-provider-aws by 100).
type awsRules struct {
	proxy *httputil.ReverseProxy
}

// MaxEC2FilterValues is the most values EC2 accepts in one filter of a
// Describe call.
const MaxEC2FilterValues = 200

// filterValueKey matches an EC2 query parameter Filter.<n>.Value.<m>.
var filterValueKey = regexp.MustCompile(`^Filter\.([0-9]+)\.Value\.[0-9]+$`)

// startAWSRules serves the rules in front of target on a loopback port and
// returns its URL and a function that stops it.
func startAWSRules(target string) (string, func(), error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	rules := &awsRules{proxy: httputil.NewSingleHostReverseProxy(u)}
	srv := &http.Server{Handler: rules}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// ServeHTTP refuses a request AWS would refuse and passes the others to
// moto.
func (a *awsRules) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if form, err := url.ParseQuery(string(body)); err == nil {
			if code, msg := ec2Refusal(form); code != "" {
				writeEC2Error(w, code, msg)
				return
			}
		}
	}
	a.proxy.ServeHTTP(w, r)
}

// ec2Refusal returns the error code and message EC2 answers form with, or
// "" when EC2 takes it.
func ec2Refusal(form url.Values) (code, msg string) {
	counts := map[string]int{}
	for key := range form {
		if m := filterValueKey.FindStringSubmatch(key); m != nil {
			counts[m[1]]++
		}
	}
	for _, n := range counts {
		if n > MaxEC2FilterValues {
			return "FilterLimitExceeded", fmt.Sprintf("The maximum number of filter values specified on a single call is %d", MaxEC2FilterValues)
		}
	}
	return "", ""
}

// writeEC2Error answers as the EC2 query API does: HTTP 400 with an XML
// error document.
func writeEC2Error(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>testenv-aws-rules</RequestID></Response>`, code, msg)
}
