"""The recurrent lesson's parts, one tab each: the gradient against distance, the theory
line and the step Jacobians, clipping, the gradient per hidden unit, the gates."""
