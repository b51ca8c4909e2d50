package v1alpha1_test

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

func TestSyncInterval(t *testing.T) {
	for _, c := range []struct {
		every string
		want  time.Duration
	}{
		{"", v1alpha1.DefaultSyncInterval},
		{"soon", v1alpha1.DefaultSyncInterval},
		{"30s", v1alpha1.DefaultSyncInterval},
		{"25h", v1alpha1.DefaultSyncInterval},
		{"-5m", v1alpha1.DefaultSyncInterval},
		{"1m", time.Minute},
		{"1h30m", 90 * time.Minute},
		{"24h", 24 * time.Hour},
	} {
		if got := (v1alpha1.ControllerConfig{SyncEvery: c.every}).SyncInterval(); got != c.want {
			t.Errorf("SyncInterval() with syncEvery %q = %s, want %s", c.every, got, c.want)
		}
	}
	if d, err := time.ParseDuration(v1alpha1.DefaultSyncEvery); err != nil || d != v1alpha1.DefaultSyncInterval {
		t.Errorf("DefaultSyncEvery %q is %s (%v), DefaultSyncInterval %s", v1alpha1.DefaultSyncEvery, d, err, v1alpha1.DefaultSyncInterval)
	}
}

// TestScheme: AddToScheme registers every kind of the package.
func TestScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{
		"NodeTagSync", "NodeTagSyncList",
		"CloudMetadata", "CloudMetadataList",
		"AzureMetadata", "AzureMetadataList",
		"AWSMetadata", "AWSMetadataList",
	} {
		if !s.Recognizes(v1alpha1.GroupVersion.WithKind(kind)) {
			t.Errorf("the scheme does not know %s", kind)
		}
	}
}

// TestAWSMetadataSpecDeepCopy checks the hand-written deep copy of
// AWSMetadataSpec: every map and slice field is filled, and the copy shares
// none of them. A field of another reference kind fails the test, so that
// whoever adds it looks at DeepCopyInto.
func TestAWSMetadataSpecDeepCopy(t *testing.T) {
	in := &v1alpha1.AWSMetadataSpec{Opcode: v1alpha1.OpcodeAdd}
	v := reflect.ValueOf(in).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.String, reflect.Bool, reflect.Int32, reflect.Int64:
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
			f.SetMapIndex(reflect.ValueOf("k").Convert(f.Type().Key()), reflect.ValueOf("v").Convert(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
			f.Index(0).Set(reflect.ValueOf("x").Convert(f.Type().Elem()))
		default:
			t.Fatalf("AWSMetadataSpec.%s is a %s: check DeepCopyInto copies it, then teach this test", name, f.Kind())
		}
	}
	out := in.DeepCopy()
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("DeepCopy() = %+v, want %+v", out, in)
	}
	o := reflect.ValueOf(out).Elem()
	for i := range o.NumField() {
		f, name := o.Field(i), o.Type().Field(i).Name
		switch f.Kind() {
		case reflect.Map:
			f.SetMapIndex(reflect.ValueOf("k").Convert(f.Type().Key()), reflect.ValueOf("changed").Convert(f.Type().Elem()))
		case reflect.Slice:
			f.Index(0).Set(reflect.ValueOf("changed").Convert(f.Type().Elem()))
		default:
			continue
		}
		if reflect.DeepEqual(v.Field(i).Interface(), f.Interface()) {
			t.Errorf("AWSMetadataSpec.%s: changing the copy changed the original", name)
		}
	}
	if (*v1alpha1.AWSMetadataSpec)(nil).DeepCopy() != nil {
		t.Error("DeepCopy of nil is not nil")
	}
}
