/*
Copyright 2026 The Conveyor Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kafkaconnector

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// countingReader counts the typed Secret reads that reach it.
type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		c.gets++
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestRestTokenIsReadAgainOnlyWhenItsSecretChanged: passes at rest reuse the
// kept token (no Secret read); a rotated Secret (a new resourceVersion in the
// watched metadata) is read again and its new value used; a deleted Secret
// is an error naming it, and the kept value is dropped.
func TestRestTokenIsReadAgainOnlyWhenItsSecretChanged(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1-rest", Namespace: "ns"}, Data: map[string][]byte{"token": []byte("one\n")}}
	cc := &v1alpha1.ConnectCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns", UID: "c1-uid"},
		Spec: v1alpha1.ConnectClusterSpec{RestAPI: v1alpha1.RestAPISpec{Authentication: v1alpha1.RestAuthentication{
			TokenSecret: &v1alpha1.SecretKeyRef{Name: "c1-rest", Key: "token"}}}}}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(secret, cc.DeepCopy()).Build()
	api := &countingReader{Reader: cl}
	r := &Reconciler{Client: cl, APIReader: api, SecretMetadata: cl}

	for range 3 {
		if tok, err := r.restToken(ctx, cc); err != nil || tok != "one" {
			t.Fatalf("restToken = %q, %v; want one", tok, err)
		}
	}
	if api.gets != 1 {
		t.Fatalf("3 passes read the Secret %d times, want 1", api.gets)
	}

	secret.Data["token"] = []byte("two")
	if err := cl.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if tok, err := r.restToken(ctx, cc); err != nil || tok != "two" {
		t.Fatalf("after the rotation restToken = %q, %v; want two", tok, err)
	}
	if api.gets != 2 {
		t.Fatalf("the rotated Secret was read %d times in all, want 2", api.gets)
	}

	if err := cl.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if tok, err := r.restToken(ctx, cc); err == nil {
		t.Fatalf("after the Secret's deletion restToken = %q, want an error", tok)
	}
	if r.tokens.len() != 0 {
		t.Fatalf("a deleted Secret's token is still kept")
	}

	// A pass that read its cluster before the cluster was deleted, and gets
	// its token after forgetCluster ran, keeps nothing: the cluster is not
	// in the cache any more (or is another object of the same name).
	if err := cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1-rest", Namespace: "ns"}, Data: map[string][]byte{"token": []byte("three")}}); err != nil {
		t.Fatal(err)
	}
	gone := cc.DeepCopy()
	gone.UID = "an-older-c1"
	if tok, err := r.restToken(ctx, gone); err != nil || tok != "three" {
		t.Fatalf("restToken of a deleted cluster = %q, %v; want three", tok, err)
	}
	if r.tokens.len() != 0 {
		t.Fatalf("the token of a cluster no longer in the cache is kept")
	}
}
