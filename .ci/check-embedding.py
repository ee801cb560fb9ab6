#!/usr/bin/env python3
"""A program that embeds the gateway's sync (GatewayConfig and GatewayKinds) must not compile the
server: no Hummingbird, Prometheus, swift-metrics or ServiceLifecycle anywhere in what those
modules depend on. And the shipped `gateway` links no test kit (GatewayTesting, PostgresTesting,
FaultProxy, TestScheduling). Reads `swift package describe --type json` on standard input."""
import json
import sys

SERVER_PRODUCTS = {"Hummingbird", "Prometheus", "Metrics", "ServiceLifecycle", "UnixSignals", "HTTPTypes"}
EMBEDDING = ["GatewayConfig", "GatewayKinds"]
TEST_KITS = {"GatewayTesting", "PostgresTesting", "FaultProxy", "TestScheduling"}

package = json.load(sys.stdin)
targets = {target["name"]: target for target in package["targets"]}
failures = []
for root in EMBEDDING:
    found = len(failures)
    seen, stack = set(), [root]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        target = targets[name]
        for product in target.get("product_dependencies", []):
            if product in SERVER_PRODUCTS:
                failures.append(f"{root} depends on {product} through {name}")
        stack.extend(target.get("target_dependencies", []))
    if len(failures) == found:
        print(f"{root}: {len(seen)} modules, none of them the server's")

def closure(root):
    seen, stack = set(), [root]
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(targets[name].get("target_dependencies", []))
    return seen


linked_kits = sorted(closure("gateway") & TEST_KITS)
if linked_kits:
    failures.append(f"the gateway executable links the test kit {', '.join(linked_kits)}")
else:
    print("gateway: links no test kit")
if failures:
    print("error:\n  " + "\n  ".join(failures), file=sys.stderr)
    sys.exit(1)
