"""The request pipeline and background services: classify, dispatch, relay, observe, control loop, coordination
between replicas, alert delivery, metrics, tracing, logging."""
