# Sourced by the script tests that train on Fashion-MNIST. Without the data set
# they cannot run, so they exit 77 (CTest: skipped) saying why, as the C tests do.
data=${CLNET_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -e "$data/train-images-idx3-ubyte" ] && [ ! -e "$data/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: Fashion-MNIST is not installed in $data (apt-get install dataset-fashion-mnist)"
  exit 77
fi
