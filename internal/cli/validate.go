package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud/clouds"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
	"github.com/tagsync/tagsync/internal/openshift"
	"github.com/tagsync/tagsync/internal/tags"
)

// Exit codes of `tagsync validate`.
const (
	// ExitInvalid: the tags were read and break at least one rule.
	ExitInvalid = 1
	// ExitUnreadable: the input could not be read or parsed, or the flags
	// are wrong.
	ExitUnreadable = 2
)

// ExitError is an error that asks for a particular process exit code. Commands
// return it through cobra's error path; the caller maps it with ExitCode.
type ExitError struct {
	// Code is the exit code to use.
	Code int
	// Err is the error itself.
	Err error
}

// Error implements error.
func (e *ExitError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode returns the process exit code for err, the error a command
// returned: 0 for nil, the Code of the first *ExitError in err's chain, and 1
// for any other error.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return 1
}

func unreadable(err error) error { return &ExitError{Code: ExitUnreadable, Err: err} }

// validateFlags are the settings of `tagsync validate`.
type validateFlags struct {
	installConfig, file, rules, cloud, output, policy string
	tags                                              []string
	openshift                                         bool
}

// NewValidateCommand returns `tagsync validate`, which checks a tag set, or the
// userTags of an OpenShift install-config, against a cloud's or the OpenShift
// installer's tag rules.
func NewValidateCommand() *cobra.Command {
	f := &validateFlags{}
	cmd := &cobra.Command{
		Use:   "validate (--install-config FILE | --workload-tag-policy FILE | [--cloud azure|aws] [--openshift] (--tags K=V,... | -f FILE))",
		Short: "Check tags, or the userTags of an OpenShift install-config, against the tag rules",
		Long: `validate checks tags without touching any cloud.

With --install-config it reads an OpenShift install-config.yaml and checks
platform.azure.userTags (and platform.azure.cloudName) or platform.aws.userTags
exactly as the OpenShift installer does: for Azure at most 10 tags, no two keys
differing only in case, keys of 1-128 letters, digits, '_', '.', '-' beginning
with a letter and not ending with '.' or '-', values of 1-256 characters, and no
key "name" or beginning with kubernetes.io, openshift.io, microsoft, azure or
windows (any case). The installer's value pattern allows , / : ; < > ? too (its
"+-@" is a character range), so a value such as "a<b" is accepted.

With --tags and/or -f it checks a tag set against the rules of --cloud, azure
or aws, as the resourceTags of an AzureMetadata / AWSMetadata: what the API
server's admission refuses (the schema and CEL rules; for Azure also ';' in a
name) and what the metadata controller would not approve (the cloud's rules),
the same check tagsync tags makes before it writes. --openshift checks instead the OpenShift
installer's userTags rules for that cloud (Azure's above when --cloud is not
given). Without --cloud and --openshift the installer's Azure rules apply, as
before --cloud existed; --rules openshift|azure|aws is the deprecated spelling.

With --workload-tag-policy it reads a WorkloadTagPolicy manifest and checks it
as the workload tags controller does, against its provider's rules: keys the
cloud refuses or takes for one another, keys the resources' creators own
(CSI drivers, the cloud provider), value templates that do not parse, and
admission's limits (1 to 20 keys, keys of at most 127 characters).

Every problem is reported, one per line on stderr (or in the data with -o json|yaml).

Exit codes:
  0  valid (prints "valid: N userTags", or "valid: N tags" for --tags and -f)
  1  invalid: at least one problem
  2  the file could not be read or parsed, or the flags are wrong

See docs/validate.md.`,
		Example: `  tagsync validate --install-config install-config.yaml
  tagsync validate --tags env=prod,team=web --tags 'query=a=b'
  tagsync validate --cloud aws --tags env=prod,team=web
  tagsync validate -f tags.yaml --cloud azure -o json
  tagsync validate --cloud aws --openshift -f user-tags.yaml
  tagsync validate --workload-tag-policy policy.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runValidate(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.installConfig, "install-config", "", "OpenShift install-config.yaml whose userTags to check")
	fl.StringVar(&f.policy, "workload-tag-policy", "", "a WorkloadTagPolicy manifest (YAML or JSON) to check as the controller would")
	fl.StringArrayVar(&f.tags, "tags", nil, "tags to check, as key=value pairs separated by commas (repeatable; a value may contain '=')")
	fl.StringVarP(&f.file, "file", "f", "", "YAML or JSON file holding a map of tags to check")
	fl.StringVar(&f.cloud, "cloud", "", "check --tags and -f against this cloud's tag rules: azure or aws")
	fl.BoolVar(&f.openshift, "openshift", false, "check --tags and -f against the OpenShift installer's userTags rules for --cloud (default azure)")
	fl.StringVar(&f.rules, "rules", "", "rules for --tags and -f: openshift, azure or aws")
	_ = fl.MarkHidden("rules") // deprecated: runValidate says so on stderr (cobra's notice would go to stdout)
	_ = cmd.RegisterFlagCompletionFunc("cloud", cobra.FixedCompletions(clouds.Names(), cobra.ShellCompDirectiveNoFileComp))
	addOutputFlag(cmd, &f.output, "json and yaml: valid and the problems, as data", "text")
	return cmd
}

// problem is one entry of the JSON report.
type problem struct {
	// Tag is the tag concerned; empty for problems of the whole set.
	Tag string `json:"tag"`
	// Message is the line text output prints.
	Message string `json:"message"`
}

// report is the JSON output of `tagsync validate -o json`.
type report struct {
	Valid    bool      `json:"valid"`
	Problems []problem `json:"problems"`
}

func runValidate(cmd *cobra.Command, f *validateFlags) error {
	var (
		err  error
		n    int
		noun string
	)
	switch {
	case f.policy != "":
		if f.installConfig != "" || len(f.tags) > 0 || f.file != "" || f.rules != "" || f.cloud != "" || f.openshift {
			return unreadable(errors.New("--workload-tag-policy cannot be combined with other inputs: the policy's provider decides the rules"))
		}
		var rerr error
		if n, err, rerr = checkPolicyFile(f.policy); rerr != nil {
			return rerr
		}
		noun = "tags"
	case f.installConfig != "":
		if len(f.tags) > 0 || f.file != "" {
			return unreadable(errors.New("--install-config cannot be combined with --tags or -f"))
		}
		if f.rules != "" || f.cloud != "" || f.openshift {
			return unreadable(errors.New("--cloud, --openshift and --rules do not apply to --install-config: the install-config's platform decides"))
		}
		c, perr := readInstallConfig(f.installConfig)
		if perr != nil {
			return perr
		}
		n, err, noun = c.UserTagCount(), c.Validate(), "userTags"
	case len(f.tags) > 0 || f.file != "":
		if f.rules != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "tagsync: --rules is deprecated: use --cloud azure|aws, or --openshift for the installer's rules")
		}
		validate, rerr := validatorFor(f)
		if rerr != nil {
			return rerr
		}
		set, terr := collectTags(f.tags, f.file)
		if terr != nil {
			return terr
		}
		n, err, noun = len(set), validate(set), "tags"
	default:
		return unreadable(errors.New("nothing to validate: give --install-config FILE, --workload-tag-policy FILE, --tags K=V or -f FILE"))
	}
	return reportValidation(cmd.OutOrStdout(), cmd.ErrOrStderr(), f.output, n, noun, err)
}

// checkPolicyFile checks a WorkloadTagPolicy manifest with the workload
// tags controller's own check against its provider's rules and creator
// keys: how many tags it names, and its problems (joined). A file that
// cannot be read, parsed (strictly: an unknown field is an error) or is not
// a WorkloadTagPolicy of a known cloud is err, an unreadable exit.
func checkPolicyFile(path string) (n int, problems, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, nil, unreadable(err)
	}
	var p v1alpha1.WorkloadTagPolicy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return 0, nil, unreadable(fmt.Errorf("%s: %w", path, err))
	}
	if p.Kind != "WorkloadTagPolicy" {
		return 0, nil, unreadable(fmt.Errorf("%s: kind %q: want WorkloadTagPolicy", path, p.Kind))
	}
	name := string(p.Spec.Provider)
	if name == "" {
		name = string(v1alpha1.ProviderAzure)
	}
	k, err := clouds.Lookup(name)
	if err != nil {
		return 0, nil, unreadable(fmt.Errorf("%s: spec.provider: %w", path, err))
	}
	var errs []error
	for _, msg := range workloadtags.Check(&p, k.Rules, k.CreatorKeys) {
		errs = append(errs, errors.New(msg))
	}
	return len(p.Spec.AllTags()), errors.Join(errs...), nil
}

// validatorFor returns the check --cloud and --openshift (or the
// deprecated --rules) name.
func validatorFor(f *validateFlags) (func(map[string]string) error, error) {
	cloud, installer := f.cloud, f.openshift
	if f.rules != "" {
		if cloud != "" || installer {
			return nil, unreadable(errors.New("--rules cannot be combined with --cloud or --openshift (it is their deprecated spelling)"))
		}
		if f.rules == "openshift" {
			cloud, installer = "azure", true
		} else {
			cloud = f.rules
		}
	}
	if cloud == "" {
		cloud, installer = "azure", true
	}
	switch {
	case cloud == "azure" && installer:
		return openshift.ValidateUserTags, nil
	case cloud == "aws" && installer:
		return openshift.ValidateAWSUserTags, nil
	case cloud == "azure":
		return admittedAndApproved(azureKind), nil
	case cloud == "aws":
		return admittedAndApproved(awsKind), nil
	}
	if f.rules != "" {
		return nil, unreadable(fmt.Errorf("--rules %q: must be openshift, azure or aws", f.rules))
	}
	return nil, unreadable(fmt.Errorf("--cloud %q: must be azure or aws", cloud))
}

// admittedAndApproved checks a tag set as the resourceTags of an object of
// kind k: with checkSpec, the API server's admission (schema and CEL
// rules) and the controller's cloud rules, the same rules `tags` applies
// before it writes.
func admittedAndApproved(k providerKind) func(map[string]string) error {
	return func(m map[string]string) error {
		opcode, ignore := v1alpha1.OpcodeUpdate, []string{}
		var errs []error
		for _, msg := range checkSpec(k, providerSpec{opcode: &opcode, tags: &m, ignore: &ignore}) {
			errs = append(errs, &specError{tag: mentioned(msg, m), msg: msg})
		}
		return errors.Join(errs...)
	}
}

// specError is one reason checkSpec gives, with the tag it names.
type specError struct{ tag, msg string }

// Error implements error.
func (e *specError) Error() string { return e.msg }

// mentioned returns the tag of set a problem names (quoted), or "".
func mentioned(problem string, set map[string]string) string {
	for _, k := range sortedKeys(set) {
		if mentions([]string{problem}, k) {
			return k
		}
	}
	return ""
}

func readInstallConfig(path string) (openshift.InstallConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return openshift.InstallConfig{}, unreadable(err)
	}
	c, err := openshift.ParseInstallConfig(data)
	if err != nil {
		return openshift.InstallConfig{}, unreadable(fmt.Errorf("%s: %w", path, err))
	}
	return c, nil
}

// collectTags gathers the tags of every --tags flag and of file. A key given
// twice (with the same spelling) is an error: only one of its values could be
// checked.
func collectTags(flags []string, file string) (map[string]string, error) {
	set := map[string]string{}
	add := func(k, v, from string) error {
		if _, dup := set[k]; dup {
			return unreadable(fmt.Errorf("tag %q is given more than once (%s)", k, from))
		}
		set[k] = v
		return nil
	}
	for _, flag := range flags {
		for _, pair := range strings.Split(flag, ",") {
			k, v, ok := strings.Cut(pair, "=")
			if !ok {
				return nil, unreadable(fmt.Errorf("--tags %q: %q is not key=value (use -f FILE for values containing ',')", flag, pair))
			}
			if err := add(k, v, "--tags"); err != nil {
				return nil, err
			}
		}
	}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, unreadable(err)
		}
		var m map[string]string
		if err := yaml.UnmarshalStrict(data, &m); err != nil {
			return nil, unreadable(fmt.Errorf("%s: not a map of tag names to values: %w", file, err))
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := add(k, m[k], file); err != nil {
				return nil, err
			}
		}
	}
	return set, nil
}

// reportValidation writes the outcome of a validation of n tags and returns
// the command's error: nil when valid, an *ExitError with ExitInvalid when
// not.
func reportValidation(stdout, stderr io.Writer, output string, n int, noun string, err error) error {
	ps := problemsOf(err)
	if output != outputTable {
		if werr := printData(stdout, output, report{Valid: len(ps) == 0, Problems: ps}); werr != nil {
			return werr
		}
	} else if len(ps) == 0 {
		if noun == "tags" && n == 1 {
			noun = "tag"
		}
		if _, werr := fmt.Fprintf(stdout, "valid: %d %s\n", n, noun); werr != nil {
			return werr
		}
	} else {
		for _, p := range ps {
			fmt.Fprintln(stderr, p.Message)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	word := "problems"
	if len(ps) == 1 {
		word = "problem"
	}
	return &ExitError{Code: ExitInvalid, Err: fmt.Errorf("invalid: %d %s", len(ps), word)}
}

// problemsOf flattens the errors a validation joined into report entries,
// in order.
func problemsOf(err error) []problem {
	ps := []problem{}
	if err == nil {
		return ps
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		p := problem{Message: e.Error()}
		var fe *openshift.FieldError
		var te *tags.TagError
		var se *specError
		switch {
		case errors.As(e, &fe):
			p.Tag = fe.Key
		case errors.As(e, &te):
			p.Tag = te.Name
		case errors.As(e, &se):
			p.Tag = se.tag
		}
		ps = append(ps, p)
	}
	return ps
}
