"""Label statistics and rules: agreement, disputes and consolidation, calibration rounds, query logs."""
