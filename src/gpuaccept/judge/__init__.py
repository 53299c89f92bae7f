"""The one judge: references, the checks table, the verdict and its rules, and where verdicts go (Prometheus
textfile, Pushgateway)."""
