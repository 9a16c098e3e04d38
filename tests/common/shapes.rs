//! Manifest sets in the shapes of the examples users start from (NGINX Gateway Fabric's
//! `examples/` and the Gateway API repository's `examples/standard/`), written here from what
//! those examples use (tests/upstream_shapes.rs, tests/explain_differential.rs).

pub const CAFE: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gateway}
spec:
  gatewayClassName: nginx
  listeners:
  - {name: http, port: 80, protocol: HTTP, hostname: "*.example.com"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coffee}
spec: {replicas: 1}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: coffee}
spec:
  parentRefs: [{name: gateway, sectionName: http}]
  hostnames: [cafe.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /coffee}}]
    backendRefs: [{name: coffee, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: tea}
spec:
  parentRefs: [{name: gateway, sectionName: http}]
  hostnames: [cafe.example.com]
  rules:
  - matches: [{path: {type: Exact, value: /tea}}]
    backendRefs: [{name: tea, port: 80}]
"#;

pub const ADVANCED_ROUTING: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: cafe}
spec:
  gatewayClassName: nginx
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: coffee}
spec:
  parentRefs: [{name: cafe}]
  hostnames: [cafe.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /coffee}}]
    backendRefs: [{name: coffee-v1-svc, port: 80}]
  - matches:
    - path: {type: PathPrefix, value: /coffee}
      headers: [{name: version, value: v2}]
    - path: {type: PathPrefix, value: /coffee}
      queryParams: [{name: TEST, value: v2}]
    backendRefs: [{name: coffee-v2-svc, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: tea}
spec:
  parentRefs: [{name: cafe}]
  hostnames: [cafe.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /tea}, method: POST}]
    backendRefs: [{name: tea-post-svc, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /tea}, method: GET}]
    backendRefs: [{name: tea-svc, port: 80}]
"#;

pub const TRAFFIC_SPLITTING: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gateway}
spec:
  gatewayClassName: nginx
  listeners: [{name: http, port: 80, protocol: HTTP, hostname: "*.example.com"}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cafe-route}
spec:
  parentRefs: [{name: gateway, sectionName: http}]
  hostnames: [cafe.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /coffee}}]
    backendRefs:
    - {name: coffee-v1, port: 80, weight: 80}
    - {name: coffee-v2, port: 80, weight: 20}
"#;

/// The Secret comes from cert-manager in the cluster: it is not among the inputs.
pub const HTTPS_TERMINATION: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gateway}
spec:
  gatewayClassName: nginx
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - name: https
    port: 443
    protocol: HTTPS
    tls:
      mode: Terminate
      certificateRefs: [{kind: Secret, name: cafe-secret, namespace: certificate}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: access-to-cafe-secret, namespace: certificate}
spec:
  to: [{group: "", kind: Secret, name: cafe-secret}]
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: default}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cafe-tls-redirect}
spec:
  parentRefs: [{name: gateway, sectionName: http}]
  hostnames: [cafe.example.com]
  rules:
  - filters:
    - type: RequestRedirect
      requestRedirect: {scheme: https, port: 443}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: coffee}
spec:
  parentRefs: [{name: gateway, sectionName: https}]
  hostnames: [cafe.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /coffee}}]
    backendRefs: [{name: coffee, port: 80}]
"#;

pub const HTTP_ROUTING: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: example}
spec: {controllerName: example.com/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: example-gateway}
spec:
  gatewayClassName: example
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: foo-route}
spec:
  parentRefs: [{name: example-gateway}]
  hostnames: [foo.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /login}}]
    backendRefs: [{name: foo-svc, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: bar-route}
spec:
  parentRefs: [{name: example-gateway}]
  hostnames: [bar.example.com]
  rules:
  - matches: [{headers: [{type: Exact, name: env, value: canary}]}]
    backendRefs: [{name: bar-svc-canary, port: 8080}]
  - backendRefs: [{name: bar-svc, port: 8080}]
"#;

pub const CROSS_NAMESPACE: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: site-ns, labels: {shared-gateway-access: "true"}}
---
apiVersion: v1
kind: Namespace
metadata: {name: store-ns, labels: {shared-gateway-access: "true"}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: shared-gateway, namespace: infra-ns}
spec:
  gatewayClassName: shared-gateway-class
  listeners:
  - name: https
    hostname: foo.example.com
    protocol: HTTPS
    port: 443
    allowedRoutes:
      namespaces:
        from: Selector
        selector: {matchLabels: {shared-gateway-access: "true"}}
    tls: {certificateRefs: [{name: foo-example-com}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: home, namespace: site-ns}
spec:
  parentRefs: [{name: shared-gateway, namespace: infra-ns}]
  rules:
  - backendRefs: [{name: home, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: store, namespace: store-ns}
spec:
  parentRefs: [{name: shared-gateway, namespace: infra-ns}]
  rules:
  - matches: [{path: {value: /store}}]
    backendRefs: [{name: store-v1, port: 8080, weight: 90}, {name: store-v2, port: 8080, weight: 10}]
"#;

pub const SIMPLE_HTTP_HTTPS: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: my-gateway}
spec:
  gatewayClassName: my-gateway-class
  listeners:
  - {name: http, protocol: HTTP, port: 80}
  - name: https
    protocol: HTTPS
    port: 443
    tls: {mode: Terminate, certificateRefs: [{kind: Secret, name: web-cert}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web}
spec:
  parentRefs: [{name: my-gateway}]
  hostnames: [www.example.com]
  rules:
  - backendRefs: [{name: web, port: 8080}]
"#;

pub const STANDARD_HTTPROUTE: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: my-gateway}
spec:
  gatewayClassName: acme
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: http-app}
spec:
  parentRefs: [{name: my-gateway}]
  hostnames: [app.example.com]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /bar}
    - path: {type: Exact, value: "/my%20path/123"}
      headers: [{type: Exact, name: magic, value: foo}]
      queryParams: [{type: Exact, name: great, value: example}]
      method: GET
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        add: [{name: my-header, value: foo}]
    backendRefs: [{name: my-service1, port: 8080}, {name: my-service2, port: 8080, weight: 2}]
"#;

pub const SETS: [(&str, &str); 8] = [
    ("cafe", CAFE),
    ("advanced-routing", ADVANCED_ROUTING),
    ("traffic-splitting", TRAFFIC_SPLITTING),
    ("https-termination", HTTPS_TERMINATION),
    ("http-routing", HTTP_ROUTING),
    ("cross-namespace", CROSS_NAMESPACE),
    ("simple-http-https", SIMPLE_HTTP_HTTPS),
    ("standard-httproute", STANDARD_HTTPROUTE),
];
