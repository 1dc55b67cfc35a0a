"""Grafana dashboards and alert rules, generated from code."""
