"""Pure decision logic: estimators, cost model, policy, controller, routing, picking, drift. No I/O, no config."""
