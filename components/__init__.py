"""Figure builders: numpy arrays and labels in, plotly figures out. No st.*, no torch."""
