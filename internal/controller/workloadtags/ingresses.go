package workloadtags

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// The AWS Load Balancer Controller's names (kubernetes-sigs/
// aws-load-balancer-controller: pkg/ingress/class.go, pkg/annotations).
const (
	// albController is the IngressClass controller of its ALBs.
	albController = "ingress.k8s.aws/alb"
	// legacyClassAnnotation is the legacy class annotation; albClass its
	// value for the AWS Load Balancer Controller.
	legacyClassAnnotation, albClass = "kubernetes.io/ingress.class", "alb"
	// albGroupAnnotation names an explicit IngressGroup: one ALB for
	// all its Ingresses.
	albGroupAnnotation = "alb.ingress.kubernetes.io/group.name"
	// defaultClassAnnotation marks the cluster's default IngressClass.
	defaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"
)

// classParamsKind is the kind of the AWS Load Balancer Controller's
// IngressClass parameters (elbv2.k8s.aws/v1beta1 IngressClassParams,
// cluster-scoped): its spec.group.name puts every Ingress of the class in
// one IngressGroup, whatever their group annotation says (apis/elbv2/
// v1beta1/ingressclassparams_types.go; the controller refuses the
// annotation on such an Ingress).
var classParamsKind = schema.GroupVersionKind{Group: "elbv2.k8s.aws", Version: "v1beta1", Kind: "IngressClassParams"}

// ingressWorkloads are the Application Load Balancers of the Ingresses of
// the AWS Load Balancer Controller in the selected namespaces, found by
// the cloud (cloud.IngressFinder) in one search by stack: an Ingress alone
// in its stack owns its ALB; Ingresses of one IngressGroup share theirs,
// which is reported, never tagged for one workload; an Ingress whose ALB
// is not made yet is pending.
func (p *pass) ingressWorkloads(ctx context.Context, nss map[string]*corev1.Namespace) ([]workload, cloud.ServiceResources, error) {
	if p.gatewayIngresses {
		ws, err := p.gatewayWorkloads(ctx, nss)
		return ws, cloud.ServiceResources{}, err
	}
	if p.ingresses == nil {
		return nil, cloud.ServiceResources{}, nil
	}
	albClasses, groups, err := p.albClasses(ctx)
	if err != nil {
		return nil, cloud.ServiceResources{}, err
	}
	var list networkingv1.IngressList
	if err := p.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, cloud.ServiceResources{}, err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	members := map[string]int{} // Ingresses per stack, in every namespace
	type selected struct {
		stack string
		w     tags.Workload
	}
	var sel []selected
	for i := range list.Items {
		ing := &list.Items[i]
		if ing.DeletionTimestamp != nil || !albClasses.serves(ing) {
			continue
		}
		stack := ing.Namespace + "/" + ing.Name
		if c, ok := classOf(ing); ok && groups[c] != "" {
			stack = groups[c]
		} else if g := ing.Annotations[albGroupAnnotation]; g != "" {
			stack = g
		}
		members[stack]++
		ns := nss[ing.Namespace]
		if ns == nil {
			continue
		}
		w := tags.Workload{Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name, Labels: ing.Labels, Annotations: ing.Annotations,
			NamespaceLabels: ns.Labels, NamespaceAnnotations: ns.Annotations}
		if p.cfg.selects(w) {
			sel = append(sel, selected{stack, w})
		}
	}
	var stacks []string
	for _, s := range sel {
		stacks = append(stacks, s.stack)
	}
	if len(stacks) == 0 {
		return nil, cloud.ServiceResources{}, nil
	}
	found, err := p.ingresses.IngressResources(ctx, stacks)
	if err != nil {
		return nil, found, err
	}
	var out []workload
	for _, s := range sel {
		source := "Ingress " + s.w.Namespace + "/" + s.w.Name
		lbs := found.Own[s.stack]
		switch {
		case members[s.stack] > 1:
			for _, c := range lbs {
				out = append(out, workload{source: source, ref: ref{shared: "the ALB of IngressGroup " + s.stack + ": " + c.ID}, w: s.w})
			}
		case len(lbs) > 0:
			for _, c := range lbs {
				out = append(out, workload{source: source, ref: ref{id: c.ID}, w: s.w})
			}
		case len(found.Failed) == 0:
			out = append(out, workload{source: source, ref: ref{notYet: true}, w: s.w})
		}
	}
	// Only what one Ingress owns is read as its own; a group's ALB is not.
	for stack := range found.Own {
		if members[stack] > 1 {
			delete(found.Own, stack)
		}
	}
	return out, found, nil
}

// albClasses are the names of the IngressClasses of the AWS Load Balancer
// Controller, and "" when one of them is the cluster's default; groups are
// the IngressGroups their IngressClassParams name, by class ("" for the
// default class's).
func (p *pass) albClasses(ctx context.Context) (classes ingressClasses, groups map[string]string, err error) {
	list, err := p.ingressClasses(ctx)
	if err != nil {
		return classes, nil, err
	}
	classes, groups = classesOf(list, albController, albClass), map[string]string{}
	for _, c := range list {
		if !classes.names[c.Name] {
			continue
		}
		group, err := p.classGroup(ctx, c.Spec.Parameters)
		if err != nil {
			return classes, nil, fmt.Errorf("IngressClass %s: %w", c.Name, err)
		}
		groups[c.Name] = group
		if c.Annotations[defaultClassAnnotation] == "true" {
			groups[""] = group
		}
	}
	return classes, groups, nil
}

// ingressClasses lists the cluster's IngressClasses.
func (p *pass) ingressClasses(ctx context.Context) ([]networkingv1.IngressClass, error) {
	var list networkingv1.IngressClassList
	err := p.reader.List(ctx, &list)
	return list.Items, err
}

// ingressClasses are one ingress controller's IngressClasses by name (""
// when one of them is the cluster's default), and the value of the legacy
// class annotation that names the controller.
type ingressClasses struct {
	names  map[string]bool
	legacy string
}

// classesOf are the IngressClasses in list whose spec.controller is
// controller; legacy is the controller's value of the legacy annotation.
func classesOf(list []networkingv1.IngressClass, controller, legacy string) ingressClasses {
	out := ingressClasses{names: map[string]bool{}, legacy: legacy}
	for _, c := range list {
		if c.Spec.Controller == controller {
			out.names[c.Name] = true
			if c.Annotations[defaultClassAnnotation] == "true" {
				out.names[""] = true
			}
		}
	}
	return out
}

// serves reports whether the controller serves ing: its class
// (spec.ingressClassName, else the legacy annotation, else the default
// class) is one of the controller's.
func (c ingressClasses) serves(ing *networkingv1.Ingress) bool {
	if name, ok := classOf(ing); ok {
		return c.names[name]
	}
	return ing.Annotations[legacyClassAnnotation] == c.legacy
}

// classGroup is the IngressGroup an IngressClass's parameters name: the
// spec.group.name of its IngressClassParams; "" when it has none, or when
// the cluster serves no IngressClassParams (the controller's CRDs not
// installed: then no class can name one).
func (p *pass) classGroup(ctx context.Context, ref *networkingv1.IngressClassParametersReference) (string, error) {
	if ref == nil || ref.Kind != classParamsKind.Kind || ref.APIGroup == nil || *ref.APIGroup != classParamsKind.Group {
		return "", nil
	}
	params := &unstructured.Unstructured{}
	params.SetGroupVersionKind(classParamsKind)
	switch err := p.reader.Get(ctx, client.ObjectKey{Name: ref.Name}, params); {
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	}
	group, _, err := unstructured.NestedString(params.Object, "spec", "group", "name")
	return group, err
}

// classOf names an Ingress's IngressClass as serves reads it: its
// ingressClassName, else "" (the default class); ok is false for an
// Ingress of the legacy class annotation, which names no IngressClass
// (and so no parameters).
func classOf(ing *networkingv1.Ingress) (name string, ok bool) {
	switch {
	case ing.Spec.IngressClassName != nil:
		return *ing.Spec.IngressClassName, true
	case ing.Annotations[legacyClassAnnotation] != "":
		return "", false
	}
	return "", true
}

// agicClass is the Application Gateway Ingress Controller's class: the
// controller of its IngressClass (azure-application-gateway) and the value
// of the legacy class annotation (Azure/application-gateway-kubernetes-
// ingress, pkg/annotations: ApplicationGatewayIngressClass).
const agicClass = "azure/application-gateway"

// agcController is the ALB Controller's IngressClass controller, the
// in-cluster half of Application Gateway for Containers (its IngressClass
// azure-alb-external; Microsoft's "Application Gateway for Containers"
// quickstarts). It reads no legacy class annotation.
const agcController = "alb.networking.azure.io/alb-controller"

// azureGateway is an Azure ingress controller that serves every Ingress
// of its classes from one gateway, and what that gateway is.
type azureGateway struct {
	controller, legacy, gateway string
}

// azureGateways are the ingress controllers of Azure whose Ingresses share
// one gateway: the Application Gateway Ingress Controller's Application
// Gateway, and Application Gateway for Containers' traffic controller
// (Microsoft.ServiceNetworking/trafficControllers), which serves every
// Ingress and Gateway that names it (its alb-name/alb-namespace or alb-id
// annotations): no single workload's resource.
var azureGateways = []azureGateway{
	{agicClass, agicClass, "the Application Gateway of the Application Gateway Ingress Controller"},
	{agcController, "", "the Application Gateway for Containers (traffic controller) of the ALB Controller"},
}

// gatewayWorkloads are the Ingresses of the Azure ingress controllers that
// share one gateway (azureGateways) in the selected namespaces, each
// reported as shared: the gateway serves every one of them and is no
// single workload's.
func (p *pass) gatewayWorkloads(ctx context.Context, nss map[string]*corev1.Namespace) ([]workload, error) {
	classes, err := p.ingressClasses(ctx)
	if err != nil {
		return nil, err
	}
	var list networkingv1.IngressList
	if err := p.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []workload
	for _, g := range azureGateways {
		served := classesOf(classes, g.controller, g.legacy)
		for i := range list.Items {
			ing := &list.Items[i]
			ns := nss[ing.Namespace]
			if ing.DeletionTimestamp != nil || !served.serves(ing) || ns == nil {
				continue
			}
			w := tags.Workload{Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name, Labels: ing.Labels, Annotations: ing.Annotations,
				NamespaceLabels: ns.Labels, NamespaceAnnotations: ns.Annotations}
			if p.cfg.selects(w) {
				out = append(out, workload{source: "Ingress " + ing.Namespace + "/" + ing.Name, ref: ref{shared: g.gateway}, w: w})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].source < out[j].source })
	return out, nil
}
