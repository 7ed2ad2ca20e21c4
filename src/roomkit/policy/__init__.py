"""Who must approve a tool call, decided ahead: standing grants (:mod:`roomkit.policy.grants`)."""
