package openshift

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Reason classifies a FieldError.
type Reason string

// The reasons a FieldError gives.
const (
	// ReasonTooMany: the map holds more tags than the installer allows.
	ReasonTooMany Reason = "TooMany"
	// ReasonDuplicateKeys: keys differ only in case (Azure).
	ReasonDuplicateKeys Reason = "DuplicateKeys"
	// ReasonInvalidKey: a key has a forbidden character, is empty or too long,
	// or (Azure) begins or ends with a character it may not.
	ReasonInvalidKey Reason = "InvalidKey"
	// ReasonInvalidValue: a value has a forbidden character, is empty or too
	// long.
	ReasonInvalidValue Reason = "InvalidValue"
	// ReasonRestrictedKey: the key is "name" or lies under a prefix or
	// namespace the platform keeps for itself.
	ReasonRestrictedKey Reason = "RestrictedKey"
	// ReasonUnsupportedCloud: userTags are set on an Azure cloud other than
	// AzurePublicCloud.
	ReasonUnsupportedCloud Reason = "UnsupportedCloud"
)

// FieldError is one problem with userTags, worded the way the installer words
// its field errors ("<field>: Invalid value: "<value>": <detail>").
type FieldError struct {
	// Field is the path of the offending field: the map
	// ("platform.azure.userTags") for problems of the whole map, or one entry
	// ("platform.azure.userTags[env]").
	Field string
	// Reason classifies the problem.
	Reason Reason
	// Key is the tag key concerned; empty for problems of the whole map.
	Key string
	// Keys lists, sorted, every key concerned by a ReasonDuplicateKeys error.
	Keys []string
	// Value is the offending tag's value (per-key problems only).
	Value string
	// Count is the number of tags (ReasonTooMany only).
	Count int
	// Detail explains the problem in words.
	Detail string
}

// Error implements error.
func (e *FieldError) Error() string {
	switch e.Reason {
	case ReasonTooMany:
		return fmt.Sprintf("%s: Too many: %d: %s", e.Field, e.Count, e.Detail)
	case ReasonDuplicateKeys, ReasonUnsupportedCloud:
		return fmt.Sprintf("%s: Forbidden: %s", e.Field, e.Detail)
	default:
		return fmt.Sprintf("%s: Invalid value: %q: %s", e.Field, e.Value, e.Detail)
	}
}

// keyPath returns the path of one entry of the map at base. Keys that would
// not print as themselves (control characters, invalid UTF-8, quotes) are
// quoted, so that every error stays on one line.
func keyPath(base, key string) string {
	if q := strconv.Quote(key); q[1:len(q)-1] != key {
		key = q
	}
	return base + "[" + key + "]"
}

func keyError(base string, reason Reason, key, value, format string, args ...any) *FieldError {
	return &FieldError{Field: keyPath(base, key), Reason: reason, Key: key, Value: value, Detail: fmt.Sprintf(format, args...)}
}

func tooMany(base string, n, limit int) *FieldError {
	return &FieldError{Field: base, Reason: ReasonTooMany, Count: n, Detail: fmt.Sprintf("must have at most %d items", limit)}
}

// validateTags returns nil or every problem of the userTags map at path,
// joined: too many tags (over limit) first, then what wholeMap (if any)
// finds in the map, then the first problem of each key, by key.
func validateTags(tags map[string]string, path string, limit int, wholeMap func(map[string]string) error, tag func(key, value string) error) error {
	var errs []error
	if len(tags) > limit {
		errs = append(errs, tooMany(path, len(tags), limit))
	}
	if wholeMap != nil {
		if err := wholeMap(tags); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if err := tag(k, tags[k]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
