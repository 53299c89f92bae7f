"""What is made of verdicts and benchmark documents once judged: fleet summaries, comparisons, baselines,
reports, Slurm glue."""
