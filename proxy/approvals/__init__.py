"""The approval life cycle, front-neutral: the flow, the operator queue, the webhook."""
