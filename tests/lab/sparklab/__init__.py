"""The spark lab: podman containers with systemd standing in for DGX Sparks (tests and demo only)."""
