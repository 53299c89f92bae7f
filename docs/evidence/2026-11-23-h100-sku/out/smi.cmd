$ nvidia-smi --query-gpu=index,name,pci.device_id,pci.sub_device_id,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv
