"""Demonstration data: the HDF5 layout, its writer and readers (``hdf5``), and the in-memory sequence
dataset that training batches are cut from (``dataset``, which needs torch)."""
