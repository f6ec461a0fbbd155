"""The lifelong loop, configs and run directories."""
