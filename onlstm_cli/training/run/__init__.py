"""What every training loop shares: its clock and budget."""
